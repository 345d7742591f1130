import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  describeJobUser,
  JobUserError,
  jobUserEnvironment,
  loadJobUser,
  parseUserSpec,
  resolveUserSpec,
  spawnIdentityFor,
} from './job-user.js';
import type { UserDatabase } from './user-database.js';

const database: UserDatabase = {
  users: [
    { name: 'root', uid: 0, gid: 0, homeDir: '/root' },
    { name: 'alice', uid: 1000, gid: 1000, homeDir: '/home/alice' },
    { name: 'dave', uid: 1001, gid: 1001, homeDir: '/home/dave' },
  ],
  groups: [
    { name: 'root', gid: 0, members: [] },
    // alice is listed in her own primary group too: it must not appear twice.
    { name: 'alice', gid: 1000, members: ['alice'] },
    { name: 'staff', gid: 50, members: ['dave', 'alice'] },
    { name: 'video', gid: 44, members: ['alice'] },
  ],
};

function resolve(user: string) {
  return resolveUserSpec(parseUserSpec(user), database, `"${user}"`);
}

describe('parseUserSpec', () => {
  it.each([
    ['1000', { user: 1000, group: undefined }],
    ['1000:50', { user: 1000, group: 50 }],
    ['alice', { user: 'alice', group: undefined }],
    ['alice:staff', { user: 'alice', group: 'staff' }],
    ['1000:staff', { user: 1000, group: 'staff' }],
    [' alice ', { user: 'alice', group: undefined }],
  ])('parses %j', (text, expected) => {
    expect(parseUserSpec(text)).toEqual(expected);
  });

  it("accepts dstack's parsed UnixUser, the uid winning over the name", () => {
    expect(parseUserSpec({ uid: 1000, gid: null, username: 'alice', groupname: 'staff' })).toEqual({
      user: 1000,
      group: 'staff',
    });
    expect(parseUserSpec({ username: 'alice' })).toEqual({ user: 'alice', group: undefined });
  });

  it.each(['', ':50', 'alice:', 'a:b:c', '99999999999'])('rejects %j naming user', (text) => {
    expect(() => parseUserSpec(text)).toThrow(JobUserError);
    expect(() => parseUserSpec(text)).toThrow(/^user /);
  });

  it('rejects a UnixUser without uid and username', () => {
    expect(() => parseUserSpec({ gid: 5 })).toThrow('neither uid nor username is set');
  });
});

describe('resolveUserSpec', () => {
  it('takes name, primary group, home and group memberships from passwd and group', () => {
    const alice = { uid: 1000, gid: 1000, username: 'alice', homeDir: '/home/alice', groups: [1000, 50, 44] };
    expect(resolve('alice')).toEqual(alice);
    expect(resolve('1000')).toEqual(alice);
    expect(resolve('dave').groups).toEqual([1001, 50]);
    expect(resolve('root').groups).toEqual([0]);
  });

  it('uses a given group instead of the primary one, and then no other group, as Docker does', () => {
    expect(resolve('alice:staff')).toMatchObject({ uid: 1000, gid: 50, groups: [50] });
    expect(resolve('alice:7')).toMatchObject({ uid: 1000, gid: 7, groups: [7] });
  });

  it('runs a uid without a passwd entry as Docker does: no name, no home, gid 0 unless given', () => {
    expect(resolve('4242')).toEqual({ uid: 4242, gid: 0, username: '', homeDir: '', groups: [0] });
    expect(resolve('4242:4242')).toEqual({ uid: 4242, gid: 4242, username: '', homeDir: '', groups: [4242] });
  });

  it('fails naming user and the passwd file for an unknown name', () => {
    expect(() => resolve('bob')).toThrow('user "bob": no user named "bob" in /etc/passwd');
  });

  it('fails naming user and the group file for an unknown group', () => {
    expect(() => resolve('alice:nogroup')).toThrow(
      'user "alice:nogroup": no group named "nogroup" in /etc/group',
    );
  });
});

describe('spawnIdentityFor', () => {
  const alice = { uid: 1000, gid: 1000, username: 'alice', homeDir: '/home/alice', groups: [1000, 44] };

  it('switches nothing when the runner already is that user', () => {
    expect(spawnIdentityFor(alice, { uid: 1000, gid: 1000 })).toBeUndefined();
  });

  it('switches ids and groups when the runner is root', () => {
    expect(spawnIdentityFor(alice, { uid: 0, gid: 0 })).toEqual({ uid: 1000, gid: 1000, groups: [1000, 44] });
  });

  it('refuses another user when the runner is not root', () => {
    expect(() => spawnIdentityFor(alice, { uid: 1001, gid: 1001 })).toThrow(
      'user: cannot run the job as alice (uid 1000, gid 1000, groups 1000,44): the runner runs as uid 1001 (gid 1001), and only a runner running as root can switch users',
    );
    expect(() => spawnIdentityFor({ ...alice, gid: 50 }, { uid: 1000, gid: 1000 })).toThrow(JobUserError);
  });
});

describe('describeJobUser and jobUserEnvironment', () => {
  it('name the user, its supplementary groups, or only its ids when it has no name', () => {
    const alice = { uid: 1000, gid: 1000, username: 'alice', homeDir: '/home/alice', groups: [1000] };
    const anonymous = { uid: 4242, gid: 0, username: '', homeDir: '/', groups: [0] };
    expect(describeJobUser(alice)).toBe('alice (uid 1000, gid 1000)');
    expect(describeJobUser({ ...alice, groups: [1000, 44] })).toBe(
      'alice (uid 1000, gid 1000, groups 1000,44)',
    );
    expect(describeJobUser(anonymous)).toBe('uid 4242 (gid 0)');
    expect(jobUserEnvironment(alice)).toEqual({ HOME: '/home/alice', USER: 'alice', LOGNAME: 'alice' });
    expect(jobUserEnvironment(anonymous)).toEqual({ HOME: '/', USER: undefined, LOGNAME: undefined });
  });
});

describe('loadJobUser', () => {
  let directory: string;

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'dstack-job-user-'));
  });

  afterEach(() => {
    rmSync(directory, { recursive: true, force: true });
  });

  function writeDatabase(passwdLines: string[]) {
    writeFileSync(join(directory, 'passwd'), `${passwdLines.join('\n')}\n`);
    writeFileSync(join(directory, 'group'), 'root:x:0:\nusers:x:100:\nvideo:x:44:carol,alice\n');
    return { passwd: join(directory, 'passwd'), group: join(directory, 'group') };
  }

  it('keeps an existing home, and a missing one that may still be created', async () => {
    const home = join(directory, 'home-alice');
    mkdirSync(home);
    const paths = writeDatabase([
      `alice:x:1000:100::${home}:/bin/sh`,
      `carol:x:1002:100::${join(directory, 'not-yet')}:/bin/sh`,
    ]);
    expect(await loadJobUser('alice', paths)).toEqual({
      uid: 1000,
      gid: 100,
      username: 'alice',
      homeDir: home,
      groups: [100, 44],
    });
    expect((await loadJobUser('carol:users', paths)).homeDir).toBe(join(directory, 'not-yet'));
  });

  it("falls back to / for a placeholder, relative, file or missing home, as dstack's runner does", async () => {
    const file = join(directory, 'a-file');
    writeFileSync(file, '');
    const paths = writeDatabase([
      'nobody:x:65534:65534::/nonexistent:/bin/false',
      'rel:x:1003:100::relative/home:/bin/sh',
      `file:x:1004:100::${file}:/bin/sh`,
    ]);
    expect((await loadJobUser('nobody', paths)).homeDir).toBe('/');
    expect((await loadJobUser('rel', paths)).homeDir).toBe('/');
    expect((await loadJobUser('file', paths)).homeDir).toBe('/');
    expect((await loadJobUser('1234', paths)).homeDir).toBe('/');
  });

  it('names the file it looked in when a user is unknown', async () => {
    const paths = writeDatabase(['root:x:0:0::/root:/bin/sh']);
    await expect(loadJobUser('alice', paths)).rejects.toThrow(
      `user "alice": no user named "alice" in ${paths.passwd}`,
    );
  });
});
