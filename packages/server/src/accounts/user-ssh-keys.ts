/**
 * Users' own SSH keys, as dstack keeps them: a pair per user, made with the user, whose private
 * half the user downloads from `users/get_my_user` (dstack's clients keep it under
 * `~/.dstack/ssh/` and log in to jobs with it; a run whose spec names no `ssh_key_pub` is
 * reachable with it). The private half is encrypted at rest.
 */

import { ResourceNotFoundError } from '@dstack/core';
import { generateProjectSshKeyPair } from '../agents/ssh-keys.js';
import type { AppContext } from '../context.js';
import type { UsersTable } from '../db/schema.js';
import { ForbiddenError } from '../security/access-errors.js';

/** The columns of a new key pair for `users`. */
export function newUserSshKeyColumns(
  app: AppContext,
): Pick<UsersTable, 'ssh_public_key' | 'ssh_private_key'> {
  const keys = generateProjectSshKeyPair();
  return { ssh_public_key: keys.publicKey, ssh_private_key: app.encryption.encrypt(keys.privateKey) };
}

/** Stores a new key pair for the user; the row as it is now. */
async function replaceUserSshKey(app: AppContext, row: UsersTable): Promise<UsersTable> {
  const columns = newUserSshKeyColumns(app);
  await app.db.updateTable('users').set(columns).where('id', '=', row.id).execute();
  return { ...row, ...columns };
}

/** The user with a key pair: users made before keys were kept get theirs now (as dstack does). */
export async function withUserSshKey(app: AppContext, row: UsersTable): Promise<UsersTable> {
  if (row.ssh_public_key && row.ssh_private_key) return row;
  return replaceUserSshKey(app, row);
}

/** The user's private key in clear, or null when the user has none. */
export function userSshPrivateKey(app: AppContext, row: UsersTable): string | null {
  return row.ssh_private_key ? app.encryption.decrypt(row.ssh_private_key) : null;
}

/** A new key pair for `username` (the old one stops working); global admins may refresh anyone's. */
export async function refreshUserSshKey(
  app: AppContext,
  actor: UsersTable,
  username: string | null | undefined,
): Promise<UsersTable> {
  const name = username ?? actor.name;
  if (actor.global_role !== 'admin' && actor.name !== name) throw new ForbiddenError();
  const row = await app.db.selectFrom('users').selectAll().where('name', '=', name).executeTakeFirst();
  if (!row) throw new ResourceNotFoundError(`User "${name}" does not exist`);
  return replaceUserSshKey(app, row);
}
