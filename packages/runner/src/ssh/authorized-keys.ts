import { timingSafeEqual } from 'node:crypto';
import type { RunnerSubmission } from '@dstack/core/agent-protocol';
import ssh2, { type ParsedKey } from 'ssh2';

/** A public key line that cannot be authorized; the message names the field and the line. */
export class AuthorizedKeyError extends Error {
  override readonly name = 'AuthorizedKeyError';
}

/** A public key allowed to log in. */
export interface AuthorizedKey {
  /** The key type, e.g. `ssh-rsa`. */
  type: string;
  /** The key in SSH wire form, as a client presents it. */
  blob: Buffer;
  /** Verifies a client's signature made with the private half. */
  key: ParsedKey;
}

/** What ssh2 can verify. A line must start with its type: options (`command=…`) would restrict a key, and are not applied. */
const KEY_TYPE = /^(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp(?:256|384|521))\s/;

/**
 * Parses authorized_keys text (one `type base64 [comment]` per line; blank lines and `#`
 * comments are skipped). Throws an {@link AuthorizedKeyError} naming `field` on a bad line.
 */
export function parseAuthorizedKeys(text: string, field: string): AuthorizedKey[] {
  const keys: AuthorizedKey[] = [];
  for (const [index, rawLine] of text.split('\n').entries()) {
    const line = rawLine.trim();
    if (line === '' || line.startsWith('#')) continue;
    const where = `${field} line ${index + 1}`;
    if (!KEY_TYPE.test(line)) {
      throw new AuthorizedKeyError(
        `${where}: expected "<type> <base64 key> [comment]" with type ssh-rsa, ssh-ed25519, ssh-dss or ecdsa-sha2-nistp*`,
      );
    }
    const parsed = ssh2.utils.parseKey(line);
    if (parsed instanceof Error) throw new AuthorizedKeyError(`${where}: ${parsed.message}`);
    keys.push({ type: parsed.type, blob: parsed.getPublicSSH(), key: parsed });
  }
  return keys;
}

/** The keys a submission authorizes: `run.run_spec.ssh_key_pub`, then `ssh_authorized_keys`. */
export function authorizedKeysOf(submission: RunnerSubmission): AuthorizedKey[] {
  return [
    ...parseAuthorizedKeys(submission.run.run_spec?.ssh_key_pub ?? '', 'run.run_spec.ssh_key_pub'),
    ...(submission.ssh_authorized_keys ?? []).flatMap((text, index) =>
      parseAuthorizedKeys(text, `ssh_authorized_keys.${index}`),
    ),
  ];
}

/** The authorized key a client presents, compared in constant time; undefined if none matches. */
export function findAuthorizedKey(
  keys: readonly AuthorizedKey[],
  type: string,
  blob: Buffer,
): AuthorizedKey | undefined {
  return keys.find(
    (key) => key.type === type && key.blob.length === blob.length && timingSafeEqual(key.blob, blob),
  );
}
