/**
 * Users: creation with a bearer token (shown once, stored as its sha256),
 * lookup by token, token refresh, and the `admin` user made at start, whose
 * token is also kept encrypted so that every start can print it.
 */
import { randomUUID } from 'node:crypto';
import {
  isValidUsername,
  ResourceNotFoundError,
  ServerClientError,
  USERNAME_RULE,
  type User,
  type UserWithCreds,
} from '@dstack/core';
import type { AppContext } from '../context.js';
import type { UsersTable } from '../db/schema.js';
import { ForbiddenError } from '../security/access-errors.js';
import { EncryptionError } from '../security/encryption.js';
import { generateToken, hashToken } from '../security/tokens.js';

export const ADMIN_USERNAME = 'admin';
/** The API model of a user row. */
export function toUserModel(row: UsersTable): User {
  return {
    id: row.id,
    username: row.name,
    global_role: row.global_role,
    created_at: new Date(row.created_at).toISOString(),
    email: null,
    active: row.active === 1,
    // Any user may create projects here (dstack's default, `DSTACK_..._ONLY_ADMINS` unset).
    permissions: { can_create_projects: true },
    ssh_public_key: null,
  };
}

/** What `users.token_encrypted` holds for a user with `token`: the admin's token encrypted, else nothing. */
function keptToken(app: AppContext, username: string, token: string): string | null {
  return username === ADMIN_USERNAME ? app.encryption.encrypt(token) : null;
}

/**
 * The admin's kept token, or null when there is none that works: an admin created before tokens
 * were kept, a token encrypted under a key config.yml no longer lists, or one replaced since.
 */
function readKeptToken(app: AppContext, admin: UsersTable): string | null {
  if (!admin.token_encrypted) return null;
  let token: string;
  try {
    token = app.encryption.decrypt(admin.token_encrypted);
  } catch (error) {
    if (EncryptionError.isInstance(error)) return null;
    throw error;
  }
  return hashToken(token) === admin.token_hash ? token : null;
}

function withCreds(row: UsersTable, token: string): UserWithCreds {
  return { ...toUserModel(row), creds: { token } };
}

/** The active user holding `token`, or null. */
export async function findUserByToken(app: AppContext, token: string): Promise<UsersTable | null> {
  const row = await app.db
    .selectFrom('users')
    .selectAll()
    .where('token_hash', '=', hashToken(token))
    .where('active', '=', 1)
    .executeTakeFirst();
  return row ?? null;
}

/** The user named `username`; throws ResourceNotFoundError. */
export async function getUserByName(app: AppContext, username: string): Promise<UsersTable> {
  const row = await app.db.selectFrom('users').selectAll().where('name', '=', username).executeTakeFirst();
  if (!row) throw new ResourceNotFoundError(`User "${username}" does not exist`);
  return row;
}

/** Global admins see every user; others see themselves. */
export async function listUsers(app: AppContext, actor: UsersTable): Promise<User[]> {
  let query = app.db.selectFrom('users').selectAll().orderBy('created_at').orderBy('name');
  if (actor.global_role !== 'admin') query = query.where('id', '=', actor.id);
  return (await query.execute()).map(toUserModel);
}

/** A user's own record, or (for global admins) anyone's. */
export async function getUserForActor(app: AppContext, actor: UsersTable, username: string): Promise<User> {
  if (actor.global_role !== 'admin' && actor.name !== username) throw new ForbiddenError();
  return toUserModel(await getUserByName(app, username));
}

/** Creates a user and returns it with its new token (the only time the token is readable). */
export async function createUser(
  app: AppContext,
  input: { username: string; global_role: 'admin' | 'user'; token?: string },
): Promise<UserWithCreds> {
  if (!isValidUsername(input.username)) {
    throw new ServerClientError(`username must be ${USERNAME_RULE}`, {
      code: 'invalid_request',
      fields: [['username']],
    });
  }
  const existing = await app.db
    .selectFrom('users')
    .select('id')
    .where('name', '=', input.username)
    .executeTakeFirst();
  if (existing) {
    throw new ServerClientError(`User "${input.username}" already exists`, {
      code: 'resource_exists',
      fields: [['username']],
    });
  }
  const token = input.token ?? generateToken();
  const row: UsersTable = {
    id: randomUUID(),
    name: input.username,
    token_hash: hashToken(token),
    token_encrypted: keptToken(app, input.username, token),
    global_role: input.global_role,
    created_at: Date.now(),
    active: 1,
  };
  await app.db.insertInto('users').values(row).execute();
  return withCreds(row, token);
}

/** A new token for `username` (the old one stops working); admins may refresh anyone's. */
export async function refreshUserToken(
  app: AppContext,
  actor: UsersTable,
  username: string,
): Promise<UserWithCreds> {
  if (actor.global_role !== 'admin' && actor.name !== username) throw new ForbiddenError();
  const row = await getUserByName(app, username);
  const token = generateToken();
  const changed = { token_hash: hashToken(token), token_encrypted: keptToken(app, row.name, token) };
  await app.db.updateTable('users').set(changed).where('id', '=', row.id).execute();
  return withCreds({ ...row, ...changed }, token);
}

/**
 * Sets a user's global role and whether they may sign in (dstack's `users/update`, for global
 * admins). The built-in `admin` and the caller keep their role and stay active, so the server is
 * never left without an admin who can sign in.
 */
export async function updateUser(
  app: AppContext,
  actor: UsersTable,
  input: { username: string; global_role: 'admin' | 'user'; active: boolean },
): Promise<User> {
  const row = await getUserByName(app, input.username);
  const demotesOrLocksOut = input.global_role !== 'admin' || !input.active;
  if (demotesOrLocksOut && (row.name === ADMIN_USERNAME || row.id === actor.id)) {
    throw new ServerClientError(
      `User "${row.name}" must stay an active admin: ${row.id === actor.id ? 'it is you' : 'it is the built-in admin'}`,
      { fields: [[input.active ? 'global_role' : 'active']] },
    );
  }
  const changed = { global_role: input.global_role, active: input.active ? 1 : 0 };
  await app.db.updateTable('users').set(changed).where('id', '=', row.id).execute();
  return toUserModel({ ...row, ...changed });
}

/** Deletes users (and their memberships). The built-in `admin` and the caller cannot be deleted. */
export async function deleteUsers(
  app: AppContext,
  actor: UsersTable,
  usernames: readonly string[],
): Promise<void> {
  for (const username of usernames) {
    if (username === ADMIN_USERNAME || username === actor.name) {
      throw new ServerClientError(`User "${username}" cannot be deleted`, { fields: [['users']] });
    }
  }
  const rows = await app.db
    .selectFrom('users')
    .select(['id', 'name'])
    .where('name', 'in', [...usernames])
    .execute();
  const missing = usernames.filter((name) => !rows.some((row) => row.name === name));
  if (missing.length > 0) throw new ResourceNotFoundError(`Users do not exist: ${missing.join(', ')}`);
  const ids = rows.map((row) => row.id);
  await app.db.transaction().execute(async (transaction) => {
    await transaction.deleteFrom('members').where('user_id', 'in', ids).execute();
    await transaction.deleteFrom('users').where('id', 'in', ids).execute();
  });
}

/**
 * Makes sure the `admin` user exists. Its token is `adminToken` when given
 * (an existing admin's token is replaced if it differs), else generated for a
 * new admin. Returns the admin's token, to print at every start: the one given
 * or generated, else the one kept from an earlier start; null when none is
 * kept (an admin made by a server that did not keep it).
 */
export async function ensureAdminUser(
  app: AppContext,
  adminToken: string | null,
): Promise<{ user: UsersTable; adminToken: string | null }> {
  const existing = await app.db
    .selectFrom('users')
    .selectAll()
    .where('name', '=', ADMIN_USERNAME)
    .executeTakeFirst();
  if (!existing) {
    try {
      const created = await createUser(app, {
        username: ADMIN_USERNAME,
        global_role: 'admin',
        ...(adminToken ? { token: adminToken } : {}),
      });
      return { user: await getUserByName(app, ADMIN_USERNAME), adminToken: created.creds.token };
    } catch (error) {
      // Another server process starting on the same database may have created it first.
      const raced = await app.db
        .selectFrom('users')
        .select('id')
        .where('name', '=', ADMIN_USERNAME)
        .executeTakeFirst();
      if (!raced) throw error;
      return ensureAdminUser(app, adminToken);
    }
  }
  if (adminToken === null) return { user: existing, adminToken: readKeptToken(app, existing) };
  const tokenHash = hashToken(adminToken);
  if (existing.token_hash !== tokenHash || readKeptToken(app, existing) !== adminToken) {
    const changed = { token_hash: tokenHash, token_encrypted: keptToken(app, ADMIN_USERNAME, adminToken) };
    await app.db.updateTable('users').set(changed).where('id', '=', existing.id).execute();
    return { user: { ...existing, ...changed }, adminToken };
  }
  return { user: existing, adminToken };
}
