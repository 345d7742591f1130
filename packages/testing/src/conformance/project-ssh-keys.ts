import { generateKeyPairSync } from 'node:crypto';
import type { ProjectSshKeys } from '@dstack/core';

/** Length-prefixed field of the SSH wire format (RFC 4251 `string`). */
function sshString(bytes: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

/**
 * A fresh ed25519 key pair: the public key in OpenSSH form
 * (`ssh-ed25519 AAAA… comment`), the private key as PKCS#8 PEM.
 */
export function generateProjectSshKeys(comment = 'dstack-conformance'): ProjectSshKeys {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const jwk = publicKey.export({ format: 'jwk' });
  if (typeof jwk.x !== 'string')
    throw new Error('node:crypto exported an ed25519 key without its x coordinate');
  const blob = Buffer.concat([
    sshString(Buffer.from('ssh-ed25519')),
    sshString(Buffer.from(jwk.x, 'base64url')),
  ]);
  return {
    publicKey: `ssh-ed25519 ${blob.toString('base64')} ${comment}`,
    privateKey: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
  };
}
