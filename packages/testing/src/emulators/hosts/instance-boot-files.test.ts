import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { HostUserDataError, INSTANCE_DIRECTORY, instanceBootFiles } from './instance-boot-files.js';
import { tarArchive } from './tar-archive.js';

const run = promisify(execFile);

function fileAt(files: ReturnType<typeof instanceBootFiles>, relative: string) {
  return files.find((file) => file.path === `${INSTANCE_DIRECTORY}/${relative}`);
}

/** Runs a generated script with the paths it writes moved under `root`, as the host's sh would run it. */
async function runScriptUnder(root: string, script: Buffer): Promise<void> {
  const rerooted = script.toString('utf8').replaceAll("'/", `'${root}/`);
  await run('sh', ['-c', rerooted]);
}

describe('instanceBootFiles', () => {
  it('keeps the exact user data and runs a script by its own interpreter line, late in boot', () => {
    const userData = '#!/bin/bash\necho hi\n';
    const files = instanceBootFiles(userData);
    expect(fileAt(files, 'user-data.txt')).toMatchObject({ content: Buffer.from(userData), mode: 0o600 });
    expect(fileAt(files, 'scripts/part-001')).toMatchObject({ content: Buffer.from(userData), mode: 0o700 });
    expect(fileAt(files, 'early.sh')).toBeUndefined();
  });

  it('runs nothing for empty user data', () => {
    expect(instanceBootFiles('').map((file) => file.path)).toEqual([`${INSTANCE_DIRECTORY}/user-data.txt`]);
  });

  it('turns runcmd into one sh script, quoting the list form as argv', () => {
    const files = instanceBootFiles(
      '#cloud-config\nruncmd:\n  - echo one && echo two\n  - [echo, "it\'s", 3]\n',
    );
    expect(fileAt(files, 'scripts/runcmd')?.content.toString()).toBe(
      "#!/bin/sh\necho one && echo two\n'echo' 'it'\\''s' '3'\n",
    );
  });

  it('writes write_files (text, base64, gzip, modes, append) and authorized keys with sh', async () => {
    const root = await mkdtemp(join(tmpdir(), 'boot-files-'));
    try {
      const userData = [
        '#cloud-config',
        'write_files:',
        '  - path: /etc/app/plain.txt',
        '    content: "line\\n"',
        '    permissions: 0600',
        '  - path: /etc/app/plain.txt',
        '    content: "more\\n"',
        '    append: true',
        '  - path: /etc/app/packed.bin',
        '    encoding: gz+b64',
        `    content: ${gzipSync(Buffer.from('unpacked')).toString('base64')}`,
        '    permissions: "0755"',
        '  - path: /etc/app/later.txt',
        '    content: later',
        '    defer: true',
        'ssh_authorized_keys:',
        '  - ssh-ed25519 AAAA first',
        '  - ssh-ed25519 BBBB second',
      ].join('\n');
      const files = instanceBootFiles(userData);
      const early = fileAt(files, 'early.sh');
      expect(early).toBeDefined();
      // chown to root needs root; the content and modes are what this checks.
      await runScriptUnder(root, Buffer.from((early?.content.toString() ?? '').replace(/^chown .*$/gm, ':')));
      expect(await readFile(join(root, 'etc/app/plain.txt'), 'utf8')).toBe('line\nmore\n');
      expect((await stat(join(root, 'etc/app/plain.txt'))).mode & 0o777).toBe(0o644);
      expect(await readFile(join(root, 'etc/app/packed.bin'), 'utf8')).toBe('unpacked');
      expect((await stat(join(root, 'etc/app/packed.bin'))).mode & 0o777).toBe(0o755);
      expect(await readFile(join(root, 'home/ubuntu/.ssh/authorized_keys'), 'utf8')).toBe(
        'ssh-ed25519 AAAA first\nssh-ed25519 BBBB second\n',
      );
      // Deferred files are written in the final stage, before runcmd.
      expect(early?.content.toString()).not.toContain('later.txt');
      expect(fileAt(files, 'scripts/00-write-files-deferred')?.content.toString()).toContain('later.txt');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('reads permissions the way cloud-init does: 0600 unquoted is octal (YAML 1.1)', () => {
    const files = instanceBootFiles('#cloud-config\nwrite_files:\n  - path: /a\n    permissions: 0600\n');
    expect(fileAt(files, 'early.sh')?.content.toString()).toContain("chmod 600 '/a'");
  });

  it('logs cloud-config keys it does not handle, as cloud-init skips a module it lacks', () => {
    const files = instanceBootFiles('#cloud-config\npackages: [curl]\n');
    expect(fileAt(files, 'early.sh')?.content.toString()).toContain('ignoring cloud-config key packages');
  });

  it.each([
    ['#cloud-config\nwrite_files: {}\n', 'write_files'],
    ['#cloud-config\nwrite_files:\n  - content: x\n', 'write_files[0].path'],
    ['#cloud-config\nwrite_files:\n  - path: relative\n', 'write_files[0].path'],
    ['#cloud-config\nwrite_files:\n  - path: /a\n    encoding: rot13\n', 'write_files[0].encoding'],
    ['#cloud-config\nwrite_files:\n  - path: /a\n    permissions: rw\n', 'write_files[0].permissions'],
    ['#cloud-config\nssh_authorized_keys:\n  - [a]\n', 'ssh_authorized_keys[0]'],
    ['#cloud-config\nruncmd:\n  - {a: 1}\n', 'runcmd[0]'],
    ['#cloud-config\nruncmd: [[echo, {}]]\n', 'runcmd[0][1]'],
    ['#cloud-config\n- a list\n', 'user_data'],
    ['#cloud-config\nkey: [unclosed\n', 'user_data'],
    ['#include http://example.invalid/data\n', 'user_data'],
  ])('refuses %j naming %s', (userData, field) => {
    expect(() => instanceBootFiles(userData)).toThrow(HostUserDataError);
    try {
      instanceBootFiles(userData);
    } catch (error) {
      expect((error as HostUserDataError).field).toBe(field);
      expect((error as Error).message).toContain(field);
    }
  });
});

describe('tarArchive', () => {
  it('is read by tar as root-owned files with their modes', async () => {
    const archive = tarArchive([
      { path: 'a/b.txt', content: Buffer.from('hello'), mode: 0o640 },
      { path: 'c', content: Buffer.alloc(1024, 7), mode: 0o700 },
    ]);
    const listing = await new Promise<string>((resolve, reject) => {
      const child = execFile('tar', ['-tv', '--numeric-owner', '-f', '-'], (error, stdout) =>
        error ? reject(error) : resolve(stdout),
      );
      child.stdin?.end(archive);
    });
    expect(listing).toMatch(/^-rw-r----- 0\/0\s+5 .* a\/b\.txt$/m);
    expect(listing).toMatch(/^-rwx------ 0\/0\s+1024 .* c$/m);
  });
});
