/**
 * ed25519 key pairs in OpenSSH's own formats, made with node:crypto alone.
 * ssh2's generator drops leading zero bytes of the public key (mscdex/ssh2#1514), so about one
 * of its pairs in 256 is malformed and both OpenSSH and ssh2 refuse it; this encoder writes the
 * fields at their fixed lengths. Format: OpenSSH's PROTOCOL.key (unencrypted, one key).
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';

export interface OpenSshKeyPair {
  /** `-----BEGIN OPENSSH PRIVATE KEY-----`, unencrypted. */
  privateKey: string;
  /** The authorized_keys line: `ssh-ed25519 AAAA… comment`. */
  publicKey: string;
}

const KEY_TYPE = 'ssh-ed25519';
const AUTH_MAGIC = Buffer.from('openssh-key-v1\0', 'latin1');
/** The private section is padded to the block size of its cipher; "none" has blocks of 8. */
const CIPHER_BLOCK_BYTES = 8;
const PEM_LINE_CHARS = 70;

/** RFC 4251 `string`: a 32-bit big-endian length, then the bytes. */
function sshString(value: Buffer | string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

function uint32(value: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(value);
  return bytes;
}

/** A new ed25519 key pair, as `ssh-keygen -t ed25519 -N '' -C comment` writes it. */
export function generateEd25519KeyPair(comment = ''): OpenSshKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const seed = Buffer.from(privateKey.export({ format: 'jwk' }).d ?? '', 'base64url');
  const point = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url');
  if (seed.length !== 32 || point.length !== 32) {
    throw new Error('node:crypto exported an ed25519 key whose halves are not 32 bytes');
  }
  const publicBlob = Buffer.concat([sshString(KEY_TYPE), sshString(point)]);
  // The same random check number twice: readers compare them to detect a wrong passphrase.
  const check = randomBytes(4).readUInt32BE(0);
  const unpadded = Buffer.concat([
    uint32(check),
    uint32(check),
    sshString(KEY_TYPE),
    sshString(point),
    sshString(Buffer.concat([seed, point])),
    sshString(comment),
  ]);
  const paddingLength = (CIPHER_BLOCK_BYTES - (unpadded.length % CIPHER_BLOCK_BYTES)) % CIPHER_BLOCK_BYTES;
  const padding = Buffer.from(Array.from({ length: paddingLength }, (_, index) => index + 1));
  const body = Buffer.concat([
    AUTH_MAGIC,
    sshString('none'),
    sshString('none'),
    sshString(''),
    uint32(1),
    sshString(publicBlob),
    sshString(Buffer.concat([unpadded, padding])),
  ]);
  const lines = body.toString('base64').match(new RegExp(`.{1,${PEM_LINE_CHARS}}`, 'g')) ?? [];
  return {
    privateKey: `-----BEGIN OPENSSH PRIVATE KEY-----\n${lines.join('\n')}\n-----END OPENSSH PRIVATE KEY-----\n`,
    publicKey: [KEY_TYPE, publicBlob.toString('base64'), comment].filter(Boolean).join(' '),
  };
}
