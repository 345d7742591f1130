/**
 * ed25519 key pairs in OpenSSH's own formats, made with node:crypto alone.
 * ssh2's generator drops leading zero bytes of the public key (mscdex/ssh2#1514), so about one
 * of its pairs in 256 is malformed and both OpenSSH and ssh2 refuse it; this encoder writes the
 * fields at their fixed lengths. Format: OpenSSH's PROTOCOL.key (unencrypted, one key).
 */
import { createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';

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
/** PKCS#8 DER of an ed25519 private key up to its 32-byte seed (RFC 8410). */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
/** SPKI DER of an ed25519 public key is this 12-byte prefix and the 32-byte point. */
const ED25519_POINT_BYTES = 32;

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
  // The seed is drawn here and the point derived from it, in DER: Node 20 can deadlock a process
  // when a key generator's job is garbage-collected while a key is exported as JWK (both take the
  // key's mutex; seen as a vitest worker stuck in ExportJWKEdKey -> GC -> ~KeyGenJob).
  const seed = randomBytes(ED25519_POINT_BYTES);
  const privateKey = createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]),
    format: 'der',
    type: 'pkcs8',
  });
  const spki = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  const point = spki.subarray(spki.length - ED25519_POINT_BYTES);
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
