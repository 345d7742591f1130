import ssh2 from 'ssh2';

export interface ProjectSshKeyPair {
  /** The private key in OpenSSH PEM format (`-----BEGIN OPENSSH PRIVATE KEY-----`). */
  privateKey: string;
  /** The public key in authorized_keys format: `ssh-ed25519 AAAA… dstack`. */
  publicKey: string;
}

/**
 * A new ed25519 key pair for a project; the server uses it for every SSH
 * connection to the project's instances, and backends authorize its public half.
 */
export function generateProjectSshKeyPair(): ProjectSshKeyPair {
  const pair = ssh2.utils.generateKeyPairSync('ed25519', { comment: 'dstack' });
  return { privateKey: pair.private, publicKey: pair.public.trim() };
}
