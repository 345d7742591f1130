import { generateKeyPair } from 'node:crypto';

/**
 * A new RSA host key, PKCS#1 PEM, for the runner's SSH endpoint. node:crypto rather than ssh2's
 * generator, whose ed25519 keys are malformed one time in 256 (mscdex/ssh2#1514). 2048 bits: the
 * key lives only as long as the runner, and clients reach it through the dstack server without
 * pinning it, so a faster key generation at every runner start is worth more than a longer key.
 */
export function generateHostKey(): Promise<string> {
  return new Promise((resolve, reject) => {
    generateKeyPair(
      'rsa',
      {
        modulusLength: 2048,
        publicKeyEncoding: { type: 'spki', format: 'pem' },
        privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
      },
      (error, _publicKey, privateKey) => (error === null ? resolve(privateKey) : reject(error)),
    );
  });
}
