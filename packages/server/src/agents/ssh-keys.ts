import ssh2 from 'ssh2';

export interface ProjectSshKeyPair {
  /** The private key in OpenSSH PEM format (`-----BEGIN OPENSSH PRIVATE KEY-----`). */
  privateKey: string;
  /** The public key in authorized_keys format: `ssh-ed25519 AAAA… dstack`. */
  publicKey: string;
}

const ED25519_PUBLIC_KEY_BYTES = 32;

/**
 * The length of the key in an `ssh-ed25519 AAAA…` line: the blob is the type name then the key,
 * each a length-prefixed string (RFC 4251 `string`). Null when the line is not of that shape.
 */
export function ed25519PublicKeyLength(publicKeyLine: string): number | null {
  const [type, base64] = publicKeyLine.trim().split(/\s+/);
  if (type !== 'ssh-ed25519' || base64 === undefined) return null;
  const blob = Buffer.from(base64, 'base64');
  if (blob.length < 4) return null;
  const typeLength = blob.readUInt32BE(0);
  const keyLengthAt = 4 + typeLength;
  if (blob.length < keyLengthAt + 4) return null;
  const keyLength = blob.readUInt32BE(keyLengthAt);
  return blob.length === keyLengthAt + 4 + keyLength ? keyLength : null;
}

/**
 * A new ed25519 key pair for a project; the server uses it for every SSH
 * connection to the project's instances, and backends authorize its public half.
 */
export function generateProjectSshKeyPair(): ProjectSshKeyPair {
  // ssh2's generator drops leading zero bytes of the public key (mscdex/ssh2#1514), so about
  // one pair in 256 is malformed and OpenSSH refuses both halves ("error in libcrypto").
  // Such a pair is drawn again.
  for (;;) {
    const pair = ssh2.utils.generateKeyPairSync('ed25519', { comment: 'dstack' });
    if (ed25519PublicKeyLength(pair.public) === ED25519_PUBLIC_KEY_BYTES) {
      return { privateKey: pair.private, publicKey: pair.public.trim() };
    }
  }
}
