import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseGroup, parsePasswd, readUserDatabase } from './user-database.js';

describe('parsePasswd', () => {
  it('reads name, uid, gid and home, skipping comments, NIS and malformed lines', () => {
    const text = [
      'root:x:0:0:root:/root:/bin/sh',
      '# a comment',
      '',
      '+nis-user::::::',
      'broken:x:notanumber:1:gecos:/home/broken:/bin/sh',
      'short:x:5',
      'nobody:x:65534:65534:nobody:/nonexistent:/bin/false',
    ].join('\n');
    expect(parsePasswd(text)).toEqual([
      { name: 'root', uid: 0, gid: 0, homeDir: '/root' },
      { name: 'nobody', uid: 65534, gid: 65534, homeDir: '/nonexistent' },
    ]);
  });
});

describe('parseGroup', () => {
  it('reads name, gid and members, skipping comments and malformed lines', () => {
    expect(
      parseGroup('root:x:0:\nstaff:x:50:alice,bob\n# c\nbad:x:y:\nvideo:x:44: carol ,,dave\nshort:x:7\n'),
    ).toEqual([
      { name: 'root', gid: 0, members: [] },
      { name: 'staff', gid: 50, members: ['alice', 'bob'] },
      { name: 'video', gid: 44, members: ['carol', 'dave'] },
      { name: 'short', gid: 7, members: [] },
    ]);
  });
});

describe('readUserDatabase', () => {
  it('reads both files, and treats a missing one as empty', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'dstack-user-database-'));
    try {
      writeFileSync(join(directory, 'passwd'), 'alice:x:1000:1000::/home/alice:/bin/sh\n');
      const database = await readUserDatabase({
        passwd: join(directory, 'passwd'),
        group: join(directory, 'missing-group'),
      });
      expect(database).toEqual({
        users: [{ name: 'alice', uid: 1000, gid: 1000, homeDir: '/home/alice' }],
        groups: [],
      });
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
