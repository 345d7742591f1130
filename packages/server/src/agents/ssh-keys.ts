import { generateEd25519KeyPair, type OpenSshKeyPair } from '@dstack/core';

/** A project's key pair: the private key in OpenSSH PEM format, the public one as an authorized_keys line. */
export type ProjectSshKeyPair = OpenSshKeyPair;

/**
 * A new ed25519 key pair for a project; the server uses it for every SSH
 * connection to the project's instances, and backends authorize its public half.
 */
export function generateProjectSshKeyPair(): ProjectSshKeyPair {
  return generateEd25519KeyPair('dstack');
}
