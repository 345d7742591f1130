import { readFile } from 'node:fs/promises';

/** One line of `passwd(5)`: the fields the runner needs. */
export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  homeDir: string;
}

/** One line of `group(5)`: the fields the runner needs. */
export interface GroupEntry {
  name: string;
  gid: number;
  /** The user names listed as members: the group is a supplementary group of each. */
  members: string[];
}

/** The users and groups of the system the runner runs on (the job's container, or the host). */
export interface UserDatabase {
  users: PasswdEntry[];
  groups: GroupEntry[];
}

export interface UserDatabasePaths {
  /** Default `/etc/passwd`. */
  passwd?: string;
  /** Default `/etc/group`. */
  group?: string;
}

/**
 * Reads the user and group files. A missing file is an empty database: minimal images (`scratch`
 * and the like) have none, and a numeric `user` still works there.
 */
export async function readUserDatabase(paths: UserDatabasePaths = {}): Promise<UserDatabase> {
  const [passwd, group] = await Promise.all([
    readIfPresent(paths.passwd ?? '/etc/passwd'),
    readIfPresent(paths.group ?? '/etc/group'),
  ]);
  return { users: parsePasswd(passwd), groups: parseGroup(group) };
}

/** `name:password:uid:gid:gecos:home:shell` lines; comments, NIS `+`/`-` lines and malformed lines are skipped. */
export function parsePasswd(text: string): PasswdEntry[] {
  const entries: PasswdEntry[] = [];
  for (const fields of databaseLines(text)) {
    if (fields.length < 7) continue;
    const uid = parseId(fields[2]);
    const gid = parseId(fields[3]);
    if (uid === undefined || gid === undefined) continue;
    entries.push({ name: fields[0] ?? '', uid, gid, homeDir: fields[5] ?? '' });
  }
  return entries;
}

/** `name:password:gid:member,member` lines; comments, NIS lines and malformed lines are skipped. */
export function parseGroup(text: string): GroupEntry[] {
  const entries: GroupEntry[] = [];
  for (const fields of databaseLines(text)) {
    if (fields.length < 3) continue;
    const gid = parseId(fields[2]);
    if (gid === undefined) continue;
    const members = (fields[3] ?? '')
      .split(',')
      .map((member) => member.trim())
      .filter((member) => member !== '');
    entries.push({ name: fields[0] ?? '', gid, members });
  }
  return entries;
}

function* databaseLines(text: string): Generator<string[]> {
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith('+') || trimmed.startsWith('-')) {
      continue;
    }
    const fields = trimmed.split(':');
    if (fields[0] === '') continue;
    yield fields;
  }
}

function parseId(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d+$/.test(text)) return undefined;
  const id = Number(text);
  return Number.isSafeInteger(id) ? id : undefined;
}

async function readIfPresent(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw error;
  }
}
