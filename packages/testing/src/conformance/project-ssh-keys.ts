import { generateEd25519KeyPair, type ProjectSshKeys } from '@dstack/core';

/** A fresh ed25519 key pair in OpenSSH's formats, as a project holds it. */
export function generateProjectSshKeys(comment = 'dstack-conformance'): ProjectSshKeys {
  return generateEd25519KeyPair(comment);
}
