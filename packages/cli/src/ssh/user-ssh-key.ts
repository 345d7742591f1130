/**
 * The user's key for SSH into jobs, `~/.dstack/ssh/id_rsa` and `id_rsa.pub`, as dstack's CLI
 * keeps it: created on first use, then reused. The server puts the public key in the run spec
 * (`ssh_key_pub`) and the runner authorizes it.
 */
import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** RSA size of a new key: dstack's choice; ssh2 and every OpenSSH accept RSA. */
const RSA_MODULUS_BITS = 3072;

/** The comment at the end of the public key line. */
const PUBLIC_KEY_COMMENT = 'dstack';

export interface UserSshKey {
  /** Absolute path of the private key (PKCS#1 PEM, mode 0600). */
  privateKeyPath: string;
  /** The private key, PKCS#1 PEM. */
  privateKey: string;
  /** The public key as one OpenSSH line, `ssh-rsa AAAA… dstack`. */
  publicKey: string;
}

/** `$HOME/.dstack/ssh`: the key and the generated SSH config live there. */
function dstackSshDirectory(environment: NodeJS.ProcessEnv = process.env): string {
  return join(environment.HOME || homedir(), '.dstack', 'ssh');
}

/** An SSH `string`/`mpint` field: a 4-byte big-endian length, then the bytes. */
function sshField(bytes: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

/** A positive big-endian integer as an SSH mpint: a leading zero byte keeps the sign bit clear. */
function sshMpint(base64Url: string): Buffer {
  const bytes = Buffer.from(base64Url, 'base64url');
  return sshField(bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
}

/** The OpenSSH public key line of an RSA key, private or public (RFC 4253 §6.6 `ssh-rsa` blob). */
function openSshPublicKeyLine(key: KeyObject): string {
  // The JWK of a private or public RSA key carries the modulus `n` and the exponent `e`.
  const { n, e } = key.export({ format: 'jwk' });
  if (typeof n !== 'string' || typeof e !== 'string') throw new Error('not an RSA key');
  const blob = Buffer.concat([sshField(Buffer.from('ssh-rsa')), sshMpint(e), sshMpint(n)]);
  return `ssh-rsa ${blob.toString('base64')} ${PUBLIC_KEY_COMMENT}`;
}

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Writes a new private key at `path` unless one is already there. The key is written to a
 * temporary file and linked into place, which fails if another process (two `ssh-proxy`s
 * started at once) created it first: then theirs is kept, and the key on disk is returned.
 */
async function createPrivateKey(path: string): Promise<string> {
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: RSA_MODULUS_BITS,
    publicKeyEncoding: { type: 'pkcs1', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, privateKey, { mode: 0o600 });
  try {
    await link(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await unlink(temporary);
  }
  return readFile(path, 'utf8');
}

/**
 * The user's key pair, created on first use. The public file is (re)written from the private
 * key when missing, so the two always match.
 */
export async function ensureUserSshKey(directory: string = dstackSshDirectory()): Promise<UserSshKey> {
  await mkdir(directory, { recursive: true, mode: 0o700 });
  const privateKeyPath = join(directory, 'id_rsa');
  const privateKey = (await readIfExists(privateKeyPath)) ?? (await createPrivateKey(privateKeyPath));
  const publicKey = openSshPublicKeyLine(createPublicKey(privateKey));
  const publicKeyPath = `${privateKeyPath}.pub`;
  if ((await readIfExists(publicKeyPath)) === undefined) {
    await writeFile(publicKeyPath, `${publicKey}\n`, { mode: 0o644 });
  }
  return { privateKeyPath, privateKey, publicKey };
}
