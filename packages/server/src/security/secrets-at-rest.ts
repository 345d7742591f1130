/**
 * At start, once an AES key encrypts: the secrets an older server (or one without a key)
 * stored as `enc:identity:` or plain text are encrypted under it, and the operator is warned
 * about secrets that stay readable (identity encryption) or unreadable (a key config.yml lacks).
 */
import { sql } from 'kysely';
import type { AppContext } from '../context.js';
import { aesKeyNameOf, EncryptionError } from './encryption.js';

/** Every column that holds a value of `app.encryption.encrypt`. */
export const ENCRYPTED_COLUMNS = [
  { table: 'projects', column: 'ssh_private_key' },
  { table: 'backends', column: 'auth' },
  { table: 'instances', column: 'remote_connection_info' },
  { table: 'secrets', column: 'value' },
  { table: 'repo_creds', column: 'creds' },
  { table: 'users', column: 'token_encrypted' },
] as const;

type EncryptedColumn = (typeof ENCRYPTED_COLUMNS)[number];

/** Rows read per query, so that a large table is not held in memory at once. */
const PAGE_SIZE = 500;

export interface SecretsAtRestOptions {
  /** Where warnings go; default `console.warn` with the server's prefix. */
  warn?: (message: string) => void;
}

export interface SecretsAtRestReport {
  /** Values encrypted under the AES key by this call. */
  reencrypted: number;
  /** Values under AES keys config.yml does not list, by key name. */
  unknownKeys: Record<string, number>;
}

/**
 * Encrypts stored secrets that are not under an AES key yet with the key that encrypts, when
 * that is an AES key, and warns about secrets left unencrypted or under unknown keys. Safe for
 * replicas starting at once on one Postgres: a value is replaced only if it is still the one
 * read (compare-and-set), and a value under any AES key is never touched again.
 */
export async function protectSecretsAtRest(
  app: AppContext,
  options: SecretsAtRestOptions = {},
): Promise<SecretsAtRestReport> {
  const warn = options.warn ?? ((message: string) => console.warn(`[dstack-server] ${message}`));
  const key = app.encryption.encryptingKey;
  if (key.type === 'identity') {
    warn(
      key.configured
        ? 'config.yml encryption.keys starts with an identity key: backend creds, project SSH private keys, project secrets, repo creds and the admin token are stored unencrypted. Put an aes key first to encrypt them (existing values are encrypted at the next start).'
        : 'config.yml has no encryption.keys: backend creds, project SSH private keys, project secrets, repo creds and the admin token are stored unencrypted. Add an aes key (secret: `head -c 32 /dev/urandom | base64`) to encrypt them (existing values are encrypted at the next start).',
    );
  }
  let reencrypted = 0;
  const unknownKeys: Record<string, number> = {};
  for (const column of ENCRYPTED_COLUMNS) {
    if (key.type === 'aes') reencrypted += await reencryptColumn(app, column, warn);
    for (const [name, count] of Object.entries(await countUnknownKeys(app, column))) {
      unknownKeys[name] = (unknownKeys[name] ?? 0) + count;
    }
  }
  const unknown = Object.entries(unknownKeys);
  if (unknown.length > 0) {
    warn(
      `The database holds secrets encrypted with keys that config.yml encryption.keys does not list (${unknown.map(([name, count]) => `"${name}": ${count}`).join(', ')}); they cannot be decrypted. Copy those keys from the config.yml of the server that wrote them: every replica on one database needs the same keys.`,
    );
  }
  return { reencrypted, unknownKeys };
}

async function reencryptColumn(
  app: AppContext,
  { table, column }: EncryptedColumn,
  warn: (message: string) => void,
): Promise<number> {
  const value = sql.ref(column);
  let done = 0;
  let after = '';
  for (;;) {
    // Paged by id: a row another replica changed meanwhile is passed over, never read again.
    const rows = await app.db
      .selectFrom(table)
      .select([sql<string>`id`.as('id'), sql<string>`${value}`.as('value')])
      .where(value, 'is not', null)
      .where(value, 'not like', 'enc:aes:%')
      .where(sql.ref('id'), '>', after)
      .orderBy(sql.ref('id'))
      .limit(PAGE_SIZE)
      .execute();
    for (const row of rows) {
      let plaintext: string;
      try {
        plaintext = app.encryption.decrypt(row.value);
      } catch (error) {
        if (!EncryptionError.isInstance(error)) throw error;
        warn(`${table}.${column} of ${row.id} is left as it is: ${error.message}`);
        continue;
      }
      const encrypted = app.encryption.encrypt(plaintext);
      const result = await app.db
        .updateTable(table)
        .set({ [column]: encrypted } as never)
        .where(sql.ref('id'), '=', row.id)
        .where(value, '=', row.value)
        .executeTakeFirst();
      done += Number(result.numUpdatedRows);
    }
    if (rows.length < PAGE_SIZE) return done;
    after = rows[rows.length - 1]!.id;
  }
}

/** AES key names of the column's values that `app.encryption` has no key for, with counts. */
async function countUnknownKeys(
  app: AppContext,
  { table, column }: EncryptedColumn,
): Promise<Record<string, number>> {
  const known = new Set(app.encryption.aesKeyNames);
  // The prefix is enough to read the key name; substr is the same function in SQLite and Postgres.
  const rows = await app.db
    .selectFrom(table)
    .select(sql<string>`substr(${sql.ref(column)}, 1, 200)`.as('head'))
    .where(sql.ref(column), 'like', 'enc:aes:%')
    .execute();
  const counts: Record<string, number> = {};
  for (const { head } of rows) {
    const name = aesKeyNameOf(head);
    if (name === null || known.has(name)) continue;
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}
