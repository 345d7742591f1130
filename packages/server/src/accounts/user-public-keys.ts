/**
 * Public keys users add (dstack's `users/public_keys/*`): each logs in to the user's jobs through
 * the SSH proxy, like the user's own key. Keys are checked as OpenSSH public keys and known by
 * OpenSSH's `SHA256:` fingerprint, unique per user.
 */
import { createHash, randomUUID } from 'node:crypto';
import { ResourceNotFoundError, ServerClientError } from '@dstack/core';
import { AuthorizedKeyError, parseAuthorizedKeys } from '@dstack/runner';
import type { AppContext } from '../context.js';
import type { UserPublicKeysTable, UsersTable } from '../db/schema.js';
import { isoTime } from '../http/iso-time.js';

/** dstack's `PublicKeyInfo`. */
export type PublicKeyInfo = {
  id: string;
  added_at: string;
  name: string;
  type: string;
  fingerprint: string;
};

function toPublicKeyInfo(row: UserPublicKeysTable): PublicKeyInfo {
  return {
    id: row.id,
    added_at: isoTime(row.created_at) as string,
    name: row.name,
    type: row.type,
    fingerprint: row.fingerprint,
  };
}

/** The user's added keys, newest first. */
export async function listUserPublicKeys(app: AppContext, user: UsersTable): Promise<PublicKeyInfo[]> {
  const rows = await app.db
    .selectFrom('user_public_keys')
    .selectAll()
    .where('user_id', '=', user.id)
    .orderBy('created_at', 'desc')
    .execute();
  return rows.map(toPublicKeyInfo);
}

/** Adds one OpenSSH public key line; named `name`, else its comment, else its md5 (as dstack). */
export async function addUserPublicKey(
  app: AppContext,
  user: UsersTable,
  key: string,
  name: string | null | undefined,
): Promise<PublicKeyInfo> {
  const line = key.trim();
  let parsed: ReturnType<typeof parseAuthorizedKeys>;
  try {
    parsed = parseAuthorizedKeys(line, 'key');
  } catch (error) {
    if (error instanceof AuthorizedKeyError) {
      throw new ServerClientError('Invalid public key, must be in OpenSSH public key format', {
        fields: [['key']],
      });
    }
    throw error;
  }
  const [parsedKey] = parsed;
  if (parsed.length !== 1 || !parsedKey) {
    throw new ServerClientError('key: expected one OpenSSH public key line', { fields: [['key']] });
  }
  const comment = line.split(/\s+/).slice(2).join(' ');
  const fingerprint = `SHA256:${createHash('sha256').update(parsedKey.blob).digest('base64').replace(/=+$/, '')}`;
  const exists = await app.db
    .selectFrom('user_public_keys')
    .select('id')
    .where('user_id', '=', user.id)
    .where('fingerprint', '=', fingerprint)
    .executeTakeFirst();
  if (exists) {
    throw new ServerClientError(`Public key ${fingerprint} is already added`, {
      code: 'resource_exists',
      fields: [['key']],
    });
  }
  const row: UserPublicKeysTable = {
    id: randomUUID(),
    user_id: user.id,
    name: name || comment || createHash('md5').update(parsedKey.blob).digest('hex'),
    type: parsedKey.type,
    fingerprint,
    key: line,
    created_at: Date.now(),
  };
  await app.db.insertInto('user_public_keys').values(row).execute();
  return toPublicKeyInfo(row);
}

/** Deletes the user's keys with these ids; an id the user has no key of is `resource_not_exists`. */
export async function deleteUserPublicKeys(
  app: AppContext,
  user: UsersTable,
  ids: readonly string[],
): Promise<void> {
  const rows = await app.db
    .selectFrom('user_public_keys')
    .select('id')
    .where('user_id', '=', user.id)
    .where('id', 'in', [...ids])
    .execute();
  const missing = ids.filter((id) => !rows.some((row) => row.id === id));
  if (missing.length > 0) throw new ResourceNotFoundError(`Public keys do not exist: ${missing.join(', ')}`);
  await app.db
    .deleteFrom('user_public_keys')
    .where('user_id', '=', user.id)
    .where('id', 'in', [...ids])
    .execute();
}

/** The authorized_keys lines of the keys `userId` added. */
export async function userPublicKeyLines(app: AppContext, userId: string): Promise<string[]> {
  const rows = await app.db
    .selectFrom('user_public_keys')
    .select('key')
    .where('user_id', '=', userId)
    .execute();
  return rows.map((row) => row.key);
}
