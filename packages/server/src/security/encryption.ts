/**
 * Encryption of secrets at rest (backend creds, project SSH keys), compatible
 * in form with dstack: `enc:aes:<key name>:<base64(iv | tag | ciphertext)>`
 * (AES-256-GCM under the first configured key), or `enc:identity:noname:<base64>`
 * when no key is configured. Every configured key can decrypt, so keys can be
 * rotated by putting a new key first and keeping the old ones after it.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { DstackError } from '@dstack/core';

/** Encrypts secrets at rest with the keys of config.yml (`enc:{aes|identity}:{key}:{ciphertext}`). */
export interface Encryption {
  encrypt(plaintext: string): string;
  /** Accepts any configured key's ciphertext, and plain text written before encryption was configured. */
  decrypt(stored: string): string;
  /**
   * What `encrypt` uses: the first AES key, or identity (values stored unencrypted) because
   * an identity key comes first (`configured`) or no key is configured.
   */
  readonly encryptingKey: { type: 'aes'; name: string } | { type: 'identity'; configured: boolean };
  /** The names of the configured AES keys: values under any of them decrypt. */
  readonly aesKeyNames: readonly string[];
}

export type EncryptionKeyConfig = { type: 'aes'; name: string; secret: string } | { type: 'identity' };

/** A stored value cannot be decrypted with the configured keys. */
export class EncryptionError extends DstackError {
  static override readonly marker: string = '@dstack/server/EncryptionError';
  override readonly name = 'EncryptionError';
}

const PREFIX = 'enc:';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const AES_KEY_BYTES = 32;
const IDENTITY_KEY_NAME = 'noname';

/** The 32 bytes of a base64 secret; throws EncryptionError naming the key when it is not 32 bytes. */
export function decodeAesSecret(name: string, secret: string): Buffer {
  const bytes = Buffer.from(secret, 'base64');
  if (
    bytes.length !== AES_KEY_BYTES ||
    bytes.toString('base64').replace(/=+$/, '') !== secret.trim().replace(/=+$/, '')
  ) {
    throw new EncryptionError(
      `Encryption key "${name}": secret must be base64 of 32 bytes (e.g. \`head -c 32 /dev/urandom | base64\`)`,
    );
  }
  return bytes;
}

/** A new AES key secret, for the config.yml `encryption.keys` entry. */
export function generateAesSecret(): string {
  return randomBytes(AES_KEY_BYTES).toString('base64');
}

/**
 * A new AES key for a config.yml the server writes. The name is random too: two servers
 * that each wrote their own key for one database then fail with "no such key" naming both,
 * rather than with a wrong secret under a shared name.
 */
export function generateAesKey(): { type: 'aes'; name: string; secret: string } {
  return { type: 'aes', name: `key-${randomBytes(4).toString('hex')}`, secret: generateAesSecret() };
}

const AES_PREFIX = `${PREFIX}aes:`;

/** Whether a stored value is encrypted under an AES key (which one is `aesKeyNameOf`). */
function isAesEncrypted(stored: string): boolean {
  return stored.startsWith(AES_PREFIX);
}

/** The AES key name a stored value is encrypted under, or null when it is not under an AES key. */
export function aesKeyNameOf(stored: string): string | null {
  if (!isAesEncrypted(stored)) return null;
  const end = stored.indexOf(':', AES_PREFIX.length);
  return end === -1 ? null : stored.slice(AES_PREFIX.length, end);
}

function encryptAes(name: string, key: Buffer, plaintext: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  const payload = Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64');
  return `${PREFIX}aes:${name}:${payload}`;
}

function decryptAes(name: string, key: Buffer, payload: string): string {
  const bytes = Buffer.from(payload, 'base64');
  if (bytes.length < IV_BYTES + TAG_BYTES) {
    throw new EncryptionError(
      `Cannot decrypt a value encrypted with key "${name}": the ciphertext is truncated`,
    );
  }
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
      'utf8',
    );
  } catch (error) {
    throw new EncryptionError(
      `Cannot decrypt a value encrypted with key "${name}": the configured secret of "${name}" is not the one it was encrypted with, or the value is corrupted`,
      { cause: error },
    );
  }
}

/**
 * Encryption with the keys of config.yml `encryption.keys`. The first key
 * encrypts; any key decrypts. No keys (or an `identity` key first) stores
 * values base64-encoded only, as dstack does without keys.
 */
export function createEncryption(keys: readonly EncryptionKeyConfig[] = []): Encryption {
  const aesKeys = new Map<string, Buffer>();
  for (const key of keys) {
    if (key.type !== 'aes') continue;
    if (aesKeys.has(key.name)) throw new EncryptionError(`Encryption key "${key.name}" is configured twice`);
    aesKeys.set(key.name, decodeAesSecret(key.name, key.secret));
  }
  const first = keys[0];
  return {
    encryptingKey:
      first?.type === 'aes'
        ? { type: 'aes', name: first.name }
        : { type: 'identity', configured: first !== undefined },
    aesKeyNames: [...aesKeys.keys()],
    encrypt(plaintext: string): string {
      if (first?.type === 'aes') return encryptAes(first.name, aesKeys.get(first.name)!, plaintext);
      return `${PREFIX}identity:${IDENTITY_KEY_NAME}:${Buffer.from(plaintext, 'utf8').toString('base64')}`;
    },
    decrypt(stored: string): string {
      // Values written before encryption existed are plain text.
      if (!stored.startsWith(PREFIX)) return stored;
      const [, type, name, ...rest] = stored.split(':');
      const payload = rest.join(':');
      if (type === 'identity') return Buffer.from(payload, 'base64').toString('utf8');
      if (type === 'aes' && name) {
        const key = aesKeys.get(name);
        if (!key) {
          throw new EncryptionError(
            `Cannot decrypt a value encrypted with key "${name}": no such key in config.yml encryption.keys (configured: ${[...aesKeys.keys()].map((k) => `"${k}"`).join(', ') || 'none'})`,
          );
        }
        return decryptAes(name, key, payload);
      }
      throw new EncryptionError(`Cannot decrypt a value of unknown encryption type "${type ?? ''}"`);
    },
  };
}
