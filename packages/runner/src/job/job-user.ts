import { stat } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { readUserDatabase, type UserDatabase, type UserDatabasePaths } from './user-database.js';

/**
 * dstack's `user` as a job spec carries it: `uid[:gid]` or `name[:group]` (either part numeric or
 * a name), or dstack's `UnixUser` object, which a dstack server sends already parsed.
 */
export type JobSpecUser =
  | string
  | {
      uid?: number | null;
      gid?: number | null;
      username?: string | null;
      groupname?: string | null;
    };

/** The job's `user` is malformed, unknown, or one the runner cannot switch to. The message names `user`. */
export class JobUserError extends Error {
  override readonly name = 'JobUserError';
}

/** A parsed `user`: each part an id or a name. */
export interface UserSpec {
  user: number | string;
  /** Undefined: the user's primary group. */
  group: number | string | undefined;
}

/** The user a job runs as. Like dstack's runner, it need not exist in the user database. */
export interface JobUser {
  uid: number;
  gid: number;
  /** The passwd name; empty when the uid has no entry. */
  username: string;
  /** The passwd home directory; `/` when there is no usable one (as dstack's runner does). */
  homeDir: string;
  /**
   * Every group the job's process is in: `gid` first, then the supplementary ones. Like dstack's
   * runner (and Docker's `--user`), only a user given without a group gets its memberships.
   */
  groups: number[];
}

/** The ids a process runs with. */
export interface ProcessIdentity {
  uid: number;
  gid: number;
}

/** The ids a job's process is switched to, with its group list (`gid` first). */
export interface SpawnIdentity extends ProcessIdentity {
  groups: number[];
}

// Node's spawn takes uid and gid as int32.
const MAX_ID = 2 ** 31 - 1;

/** Parses a `user`; throws {@link JobUserError} naming it when it is malformed. */
export function parseUserSpec(user: JobSpecUser): UserSpec {
  if (typeof user === 'string') {
    const parts = user.trim().split(':');
    if (parts.length > 2 || parts.some((part) => part === '')) {
      throw new JobUserError(`user "${user}": expected "uid[:gid]" or "name[:group]"`);
    }
    const [userPart = '', groupPart] = parts;
    return {
      user: idOrName(userPart, user),
      group: groupPart === undefined ? undefined : idOrName(groupPart, user),
    };
  }
  const described = JSON.stringify(user);
  const userPart = user.uid ?? user.username ?? undefined;
  if (userPart === undefined || userPart === '') {
    throw new JobUserError(`user ${described}: neither uid nor username is set`);
  }
  const groupPart = user.gid ?? user.groupname ?? undefined;
  return {
    user: typeof userPart === 'number' ? checkedId(userPart, described) : userPart,
    group:
      groupPart === undefined || groupPart === ''
        ? undefined
        : typeof groupPart === 'number'
          ? checkedId(groupPart, described)
          : groupPart,
  };
}

/**
 * Resolves a parsed `user` against the user database, as Docker's `--user` does: a uid without a
 * passwd entry is used as is, with gid 0 unless a group is given; a name must exist.
 * `homeDir` is the raw passwd value here ('' without an entry); {@link loadJobUser} checks it.
 */
export function resolveUserSpec(
  spec: UserSpec,
  database: UserDatabase,
  described: string,
  paths: Required<UserDatabasePaths> = { passwd: '/etc/passwd', group: '/etc/group' },
): JobUser {
  const entry =
    typeof spec.user === 'number'
      ? database.users.find((user) => user.uid === spec.user)
      : database.users.find((user) => user.name === spec.user);
  if (entry === undefined && typeof spec.user === 'string') {
    throw new JobUserError(`user ${described}: no user named "${spec.user}" in ${paths.passwd}`);
  }
  let gid: number;
  // Docker: "when specifying a group for the user, the user will have only the specified group membership".
  let groups: number[] | undefined;
  if (typeof spec.group === 'number') {
    gid = spec.group;
  } else if (typeof spec.group === 'string') {
    const groupName = spec.group;
    const group = database.groups.find((candidate) => candidate.name === groupName);
    if (group === undefined) {
      throw new JobUserError(`user ${described}: no group named "${groupName}" in ${paths.group}`);
    }
    gid = group.gid;
  } else {
    // Docker: "when the user doesn't have a primary group then the image will be run with the root group".
    gid = entry?.gid ?? 0;
    if (entry !== undefined) groups = groupsOfMember(entry.name, gid, database);
  }
  return {
    uid: typeof spec.user === 'number' ? spec.user : (entry?.uid ?? 0),
    gid,
    username: entry?.name ?? '',
    homeDir: entry?.homeDir ?? '',
    groups: groups ?? [gid],
  };
}

/** As `initgroups(3)` builds it: `gid`, then every group that lists `username` as a member. */
function groupsOfMember(username: string, gid: number, database: UserDatabase): number[] {
  const groups = [gid];
  for (const group of database.groups) {
    if (group.members.includes(username) && !groups.includes(group.gid)) groups.push(group.gid);
  }
  return groups;
}

/** Parses `user` and resolves it against this system's `/etc/passwd` and `/etc/group`. */
export async function loadJobUser(user: JobSpecUser, paths: UserDatabasePaths = {}): Promise<JobUser> {
  const described = typeof user === 'string' ? `"${user}"` : JSON.stringify(user);
  const spec = parseUserSpec(user);
  const fullPaths = { passwd: paths.passwd ?? '/etc/passwd', group: paths.group ?? '/etc/group' };
  const resolved = resolveUserSpec(spec, await readUserDatabase(fullPaths), described, fullPaths);
  return { ...resolved, homeDir: await usableHomeDir(resolved.homeDir) };
}

/**
 * The ids to spawn the job with, or undefined when the runner already runs as that user (the job
 * then keeps the runner's groups). Only a runner running as root can switch; otherwise a
 * different user is refused with a clear error.
 */
export function spawnIdentityFor(user: JobUser, runner: ProcessIdentity): SpawnIdentity | undefined {
  if (user.uid === runner.uid && user.gid === runner.gid) return undefined;
  if (runner.uid === 0) return { uid: user.uid, gid: user.gid, groups: user.groups };
  throw new JobUserError(
    `user: cannot run the job as ${describeJobUser(user)}: the runner runs as uid ${runner.uid} (gid ${runner.gid}), ` +
      'and only a runner running as root can switch users',
  );
}

/**
 * `nobody (uid 65534, gid 65534)`, `alice (uid 1000, gid 1000, groups 1000,27)` when it has
 * supplementary groups, or `uid 1234 (gid 0)` for a uid without a passwd entry.
 */
export function describeJobUser(user: JobUser): string {
  const groups = user.groups.length > 1 ? `, groups ${user.groups.join(',')}` : '';
  return user.username === ''
    ? `uid ${user.uid} (gid ${user.gid}${groups})`
    : `${user.username} (uid ${user.uid}, gid ${user.gid}${groups})`;
}

/**
 * The login variables of the job's user: HOME, USER and LOGNAME. Undefined removes an inherited
 * value: a uid without a name must not keep the runner's `USER=root`.
 */
export function jobUserEnvironment(user: JobUser): Record<string, string | undefined> {
  const name = user.username === '' ? undefined : user.username;
  return { HOME: user.homeDir, USER: name, LOGNAME: name };
}

/** The identity of this process; undefined where POSIX ids do not exist (Windows). */
export function currentProcessIdentity(): ProcessIdentity | undefined {
  if (process.getuid === undefined || process.getgid === undefined) return undefined;
  return { uid: process.getuid(), gid: process.getgid() };
}

function idOrName(part: string, original: string): number | string {
  return /^\d+$/.test(part) ? checkedId(Number(part), `"${original}"`) : part;
}

function checkedId(id: number, described: string): number {
  if (!Number.isInteger(id) || id < 0 || id > MAX_ID) {
    throw new JobUserError(`user ${described}: ids must be integers from 0 to ${MAX_ID}, got ${id}`);
  }
  return id;
}

/** dstack's rule: a home that is missing, relative, not a directory, or a `nonexistent` placeholder becomes `/`. */
async function usableHomeDir(homeDir: string): Promise<string> {
  if (homeDir === '' || !isAbsolute(homeDir)) return '/';
  try {
    return (await stat(homeDir)).isDirectory() ? homeDir : '/';
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return '/';
    // A home that is simply not created yet is kept (the job may create it); `/nonexistent` stays so.
    return homeDir.includes('nonexistent') ? '/' : homeDir;
  }
}
