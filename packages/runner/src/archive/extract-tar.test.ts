import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type CraftedEntry,
  craftTar,
  directory,
  file,
  gnuLongName,
  hardLink,
  pax,
  symlink,
} from '../testing/crafted-tar.test.helpers.js';
import { extractTarArchive, UnpackedSizeLimitError } from './extract-tar.js';

let sandbox: string;
let destination: string;
let sentinel: string;

beforeEach(() => {
  // The sandbox plays the file system's root: a sentinel beside the destination stands for /etc/passwd.
  sandbox = mkdtempSync(join(tmpdir(), 'dstack-extract-'));
  destination = join(sandbox, 'dest');
  sentinel = join(sandbox, 'sentinel');
  mkdirSync(destination);
  writeFileSync(sentinel, 'root:x:0:0:root:/root:/bin/sh\n', { mode: 0o644 });
  chmodSync(sentinel, 0o644);
});

afterEach(() => {
  rmSync(sandbox, { recursive: true, force: true });
});

async function extract(entries: readonly CraftedEntry[], options: { gzip?: boolean } = {}): Promise<void> {
  const archive = join(sandbox, 'archive.tar');
  writeFileSync(archive, craftTar(entries, options));
  try {
    await extractTarArchive(archive, destination);
  } finally {
    rmSync(archive);
  }
}

/** Nothing outside the destination was created or changed: the sentinel is as it was. */
function expectOutsideUntouched(): void {
  expect(readdirSync(sandbox).sort()).toEqual(['dest', 'sentinel']);
  const info = lstatSync(sentinel);
  expect(readFileSync(sentinel, 'utf8')).toBe('root:x:0:0:root:/root:/bin/sh\n');
  expect(info.mode & 0o7777).toBe(0o644);
  expect(info.nlink).toBe(1);
  expect([info.uid, info.gid]).toEqual([process.getuid?.(), process.getgid?.()]);
}

describe('extractTarArchive refuses what would reach outside the destination', () => {
  it('refuses an absolute entry path', async () => {
    await expect(extract([file(sentinel, 'pwned\n')])).rejects.toThrow(
      `tar archive entry "${sentinel}" refused: the path is absolute`,
    );
    expectOutsideUntouched();
  });

  it('refuses a path that climbs out with ..', async () => {
    await expect(extract([file('../sentinel', 'pwned\n')])).rejects.toThrow(
      'tar archive entry "../sentinel" refused: the path climbs out with ..',
    );
    await expect(extract([directory('a/'), file('a/../../sentinel', 'pwned\n')])).rejects.toThrow(
      'entry "a/../../sentinel" refused',
    );
    expectOutsideUntouched();
  });

  it('refuses a hard link to an absolute path (pw -> /etc/passwd)', async () => {
    await expect(extract([hardLink('pw', sentinel)])).rejects.toThrow(
      `tar archive entry "pw" refused: hard link to ${sentinel}: the target is absolute`,
    );
    expect(readdirSync(destination)).toEqual([]);
    expectOutsideUntouched();
  });

  it('refuses a hard link to ../x', async () => {
    await expect(extract([hardLink('pw', '../sentinel')])).rejects.toThrow(
      'tar archive entry "pw" refused: hard link to ../sentinel: the target climbs out with ..',
    );
    expectOutsideUntouched();
  });

  it('refuses a hard link to a file the archive did not write, or to a link it did', async () => {
    writeFileSync(join(destination, 'already-there'), 'x');
    await expect(extract([hardLink('pw', 'already-there')])).rejects.toThrow(
      'hard link to already-there: the target is not a file of this archive',
    );
    await expect(extract([symlink('up', '.'), hardLink('pw', 'up')])).rejects.toThrow(
      'hard link to up: the target is not a file of this archive',
    );
    expectOutsideUntouched();
  });

  it('refuses a symbolic link to /, and never writes through one', async () => {
    await expect(extract([symlink('root', '/'), file(`root${sentinel}`, 'pwned\n')])).rejects.toThrow(
      'tar archive entry "root" refused: symbolic link to /: the target is absolute',
    );
    await expect(
      extract([directory('inside/'), symlink('through', 'inside'), file('through/x', 'data')]),
    ).rejects.toThrow(
      'tar archive entry "through/x" refused: the path passes through the symbolic link through',
    );
    expect(readdirSync(join(destination, 'inside'))).toEqual([]);
    expectOutsideUntouched();
  });

  it('refuses a file over a symbolic link planted before it, by replacing the link instead of following it', async () => {
    symlinkSync(sentinel, join(destination, 'planted'));
    await extract([file('planted', 'mine\n')]);
    expect(lstatSync(join(destination, 'planted')).isFile()).toBe(true);
    expect(readFileSync(join(destination, 'planted'), 'utf8')).toBe('mine\n');
    expectOutsideUntouched();
  });

  it('refuses symbolic links that escape, directly or through other links', async () => {
    await expect(extract([symlink('up', '..')])).rejects.toThrow(
      'tar archive entry "up" refused: symbolic link to ..: the target is outside the destination',
    );
    await expect(extract([directory('a/b/'), symlink('a/b/c', '../../../sentinel')])).rejects.toThrow(
      'entry "a/b/c" refused: symbolic link to ../../../sentinel',
    );
    // Spelled, `up/../..` stays in a/; resolved, `up` is a and a/../.. is outside.
    await expect(
      extract([directory('a/b/'), symlink('a/b/esc', 'up/../../sentinel'), symlink('a/b/up', '..')]),
    ).rejects.toThrow('entry "a/b/esc" refused: symbolic link to up/../../sentinel: the target is outside');
    expect(readdirSync(join(destination, 'a', 'b'))).toEqual(['up']);
    expectOutsideUntouched();
  });

  it('drops setuid, setgid and sticky bits', async () => {
    await extract([
      directory('shared/', 0o3777),
      file('shared/suid', '#!/bin/sh\n', 0o4755),
      file('shared/sgid', 'x', 0o2711),
    ]);
    expect(statSync(join(destination, 'shared')).mode & 0o7777).toBe(0o777);
    expect(statSync(join(destination, 'shared', 'suid')).mode & 0o7777).toBe(0o755);
    expect(statSync(join(destination, 'shared', 'sgid')).mode & 0o7777).toBe(0o711);
    expectOutsideUntouched();
  });

  it('names a corrupt archive as not a tar archive', async () => {
    const archive = join(sandbox, 'archive.tar');
    writeFileSync(archive, Buffer.alloc(1024, 'x'));
    await expect(extractTarArchive(archive, destination)).rejects.toThrow('not a tar archive');
    writeFileSync(archive, Buffer.from([0x1f, 0x8b, 1, 2, 3]));
    await expect(extractTarArchive(archive, destination)).rejects.toThrow('not valid gzip');
    writeFileSync(archive, craftTar([file('big', 'x'.repeat(4096))]).subarray(0, 2048));
    await expect(extractTarArchive(archive, destination)).rejects.toThrow(
      'the tar archive ends early, at byte 2048',
    );
    rmSync(archive);
    expectOutsideUntouched();
  });
});

describe('extractTarArchive caps what an archive unpacks to', () => {
  it('stops a gzipped file of zeros past maxUnpackedBytes, having written no more than that', async () => {
    const archive = join(sandbox, 'bomb.tar.gz');
    // 8 MiB of zeros gzip to about 8 KiB.
    writeFileSync(archive, craftTar([file('zeros', '\0'.repeat(8 * 1024 * 1024))], { gzip: true }));
    const limit = 256 * 1024;
    const unpacking = extractTarArchive(archive, destination, { maxUnpackedBytes: limit });
    await expect(unpacking).rejects.toBeInstanceOf(UnpackedSizeLimitError);
    await expect(unpacking).rejects.toThrow('the archive unpacks to more than 262144 bytes');
    expect(statSync(join(destination, 'zeros')).size).toBeLessThanOrEqual(limit);
    rmSync(archive);
    expectOutsideUntouched();
  });

  it('counts headers too: many empty files are refused like one large file', async () => {
    const entries = Array.from({ length: 200 }, (_, index) => file(`empty-${index}`, ''));
    await expect(
      (async () => {
        const archive = join(sandbox, 'many.tar');
        writeFileSync(archive, craftTar(entries));
        await extractTarArchive(archive, destination, { maxUnpackedBytes: 64 * 1024 });
      })(),
    ).rejects.toBeInstanceOf(UnpackedSizeLimitError);
    expect(readdirSync(destination).length).toBeLessThan(200);
  });

  it('unpacks an archive within the cap, and any archive with 0 (no cap)', async () => {
    const archive = join(sandbox, 'small.tar');
    writeFileSync(archive, craftTar([file('a.txt', 'a\n')]));
    await extractTarArchive(archive, destination, { maxUnpackedBytes: 16 * 1024 });
    await extractTarArchive(archive, join(sandbox, 'dest'), { maxUnpackedBytes: 0 });
    expect(readFileSync(join(destination, 'a.txt'), 'utf8')).toBe('a\n');
  });
});

describe('extractTarArchive unpacks ordinary archives', () => {
  it('unpacks a nested repo with relative symbolic links and hard links inside it', async () => {
    await extract(
      [
        directory('./'),
        directory('./src/'),
        file('./src/main.py', 'print("hi")\n', 0o755),
        file('./README.md', '# repo\n'),
        symlink('./docs', 'src'),
        symlink('./src/readme', '../README.md'),
        hardLink('./src/same.py', './src/main.py'),
        directory('./empty/', 0o700),
      ],
      { gzip: true },
    );
    expect(readFileSync(join(destination, 'docs', 'main.py'), 'utf8')).toBe('print("hi")\n');
    expect(readlinkSync(join(destination, 'src', 'readme'))).toBe('../README.md');
    expect(readFileSync(join(destination, 'src', 'readme'), 'utf8')).toBe('# repo\n');
    expect(statSync(join(destination, 'src', 'same.py')).ino).toBe(
      statSync(join(destination, 'src', 'main.py')).ino,
    );
    expect(statSync(join(destination, 'src', 'main.py')).mode & 0o777).toBe(0o755);
    expect(statSync(join(destination, 'empty')).mode & 0o777).toBe(0o700);
    expect(statSync(join(destination, 'src', 'main.py')).mtimeMs).toBe(1_700_000_000_000);
    expectOutsideUntouched();
  });

  it('reads long names from pax headers, GNU long names and the ustar prefix', async () => {
    const deep = `${'d'.repeat(60)}/${'e'.repeat(60)}/${'f'.repeat(60)}`;
    await extract([
      pax({ path: `${deep}/pax.txt` }),
      file('ignored-short-name', 'from pax\n'),
      gnuLongName(`${deep}/gnu.txt`),
      file('ignored-too', 'from a GNU long name\n'),
      pax({ linkpath: `${deep}/pax.txt` }),
      symlink('pax-link', 'ignored'),
      gnuLongName(`${deep}/gnu.txt`, 'K'),
      hardLink('gnu-hard', 'ignored'),
      { ...file('prefixed.txt', 'from the prefix\n'), prefix: `${'d'.repeat(60)}/${'p'.repeat(90)}` },
    ]);
    expect(readFileSync(join(destination, deep, 'pax.txt'), 'utf8')).toBe('from pax\n');
    expect(readFileSync(join(destination, deep, 'gnu.txt'), 'utf8')).toBe('from a GNU long name\n');
    expect(readlinkSync(join(destination, 'pax-link'))).toBe(`${deep}/pax.txt`);
    expect(readFileSync(join(destination, 'gnu-hard'), 'utf8')).toBe('from a GNU long name\n');
    expect(readFileSync(join(destination, 'd'.repeat(60), 'p'.repeat(90), 'prefixed.txt'), 'utf8')).toBe(
      'from the prefix\n',
    );
    expect(readdirSync(destination).sort()).toEqual(['d'.repeat(60), 'gnu-hard', 'pax-link']);
    expectOutsideUntouched();
  });

  it("reads GNU's base-256 numbers", async () => {
    await extract([{ ...file('sized', 'three'), base256Size: true }, file('after', 'next\n')]);
    expect(readFileSync(join(destination, 'sized'), 'utf8')).toBe('three');
    expect(readFileSync(join(destination, 'after'), 'utf8')).toBe('next\n');
  });

  it('refuses a long name that climbs out, whichever header carries it', async () => {
    await expect(extract([pax({ path: '../sentinel' }), file('safe', 'pwned\n')])).rejects.toThrow(
      'entry "../sentinel" refused',
    );
    await expect(extract([gnuLongName(sentinel, 'K'), hardLink('pw', 'safe')])).rejects.toThrow(
      `entry "pw" refused: hard link to ${sentinel}: the target is absolute`,
    );
    expectOutsideUntouched();
  });
});

/** A tree as a comparable list: type, permission bits, content or link target, hard-link groups. */
function snapshot(root: string): string[] {
  const lines: string[] = [];
  const inodes = new Map<number, string>();
  const walk = (directory: string) => {
    for (const name of readdirSync(directory).sort()) {
      const path = join(directory, name);
      const info = lstatSync(path);
      const shown = relative(root, path);
      const mode = (info.mode & 0o7777).toString(8);
      if (info.isDirectory()) {
        lines.push(`dir ${shown} ${mode}`);
        walk(path);
      } else if (info.isSymbolicLink()) {
        lines.push(`symlink ${shown} -> ${readlinkSync(path)}`);
      } else {
        const first = inodes.get(info.ino);
        inodes.set(info.ino, first ?? shown);
        lines.push(
          first === undefined
            ? `file ${shown} ${mode} ${Math.floor(info.mtimeMs / 1000)} ${readFileSync(path, 'base64')}`
            : `hardlink ${shown} = ${first}`,
        );
      }
    }
  };
  walk(root);
  return lines;
}

describe('extractTarArchive unpacks what GNU tar and busybox tar write as they would', () => {
  let source: string;

  beforeEach(() => {
    source = join(sandbox, 'source');
    // Longer than ustar's 100-byte name: GNU long names, pax headers or ustar's prefix, per writer.
    const long = `${'long-directory-name-'.repeat(4)}/${'x'.repeat(60)}`;
    mkdirSync(join(source, 'src', 'nested'), { recursive: true });
    mkdirSync(join(source, 'empty'));
    mkdirSync(join(source, long), { recursive: true });
    writeFileSync(join(source, 'README.md'), '# repo\n');
    writeFileSync(join(source, 'src', 'run.sh'), '#!/bin/sh\necho run\n', { mode: 0o755 });
    writeFileSync(join(source, 'src', 'nested', 'secret key.pem'), 'private\n', { mode: 0o600 });
    writeFileSync(join(source, 'src', 'nested', 'ünïcode.txt'), Buffer.alloc(70_000, 'z'));
    writeFileSync(join(source, long, 'deep-file-with-a-long-name.txt'), 'deep\n');
    symlinkSync('src/run.sh', join(source, 'run'));
    symlinkSync('../../README.md', join(source, 'src', 'nested', 'readme'));
    symlinkSync('missing-target', join(source, 'dangling'));
    execFileSync('ln', [join(source, 'README.md'), join(source, 'src', 'README.hard')]);
    chmodSync(join(source, 'empty'), 0o750);
    execFileSync('touch', [
      '-d',
      '2024-01-02T03:04:05Z',
      join(source, 'README.md'),
      join(source, 'src', 'run.sh'),
    ]);
    // The snapshot is taken from the source as it is after archiving (rmSync keeps nothing of it).
  });

  const writers: Array<[string, (archive: string) => string[], string]> = [
    ['GNU tar (gnu format)', (archive) => ['-cf', archive, '-C', source, '.'], 'tar'],
    [
      'GNU tar (pax format, gzipped)',
      (archive) => ['--format=pax', '-czf', archive, '-C', source, '.'],
      'tar',
    ],
    ['GNU tar (ustar format)', (archive) => ['--format=ustar', '-cf', archive, '-C', source, '.'], 'tar'],
    ['busybox tar', (archive) => ['tar', '-cf', archive, '-C', source, '.'], 'busybox'],
    ['busybox tar (gzipped)', (archive) => ['tar', '-czf', archive, '-C', source, '.'], 'busybox'],
  ];

  for (const [writer, args, command] of writers) {
    it(`unpacks ${writer}'s archive with the same content, modes, times and links`, async () => {
      const archive = join(sandbox, 'real.tar');
      execFileSync(command, args(archive));
      await extractTarArchive(archive, destination);
      rmSync(archive);
      expect(snapshot(destination)).toEqual(snapshot(source));
      expect(readdirSync(sandbox).sort()).toEqual(['dest', 'sentinel', 'source']);
    });
  }
});
