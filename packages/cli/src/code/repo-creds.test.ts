import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { httpsUrlOf, parseRemoteUrl, redactUrl, resolveRepoCreds, sshUrlOf } from './repo-creds.js';

describe('remote URLs for repo creds', () => {
  it.each([
    ['git@github.com:org/repo.git', 'https://github.com/org/repo.git', 'ssh://git@github.com/org/repo.git'],
    [
      'ssh://deploy@git.example:2222/srv/repo.git',
      'https://git.example/srv/repo.git',
      'ssh://deploy@git.example:2222/srv/repo.git',
    ],
    ['https://GitHub.com/org/repo', 'https://github.com/org/repo', 'ssh://git@github.com/org/repo'],
    [
      'http://127.0.0.1:8080/private.git',
      'http://127.0.0.1:8080/private.git',
      'ssh://git@127.0.0.1/private.git',
    ],
  ])('%s → %s and %s', (remote, https, ssh) => {
    const parsed = parseRemoteUrl(remote);
    expect(httpsUrlOf(parsed)).toBe(https);
    expect(sshUrlOf(parsed)).toBe(ssh);
  });

  it('refuses a remote that is not HTTP(S) or SSH, without showing its password', () => {
    expect(() => parseRemoteUrl('file:///srv/repo.git')).toThrow('is not an HTTP(S) or SSH URL');
    expect(() => parseRemoteUrl('ftp://me:pw@host/repo')).toThrow('ftp://me@host/repo');
  });

  it('redacts passwords in URLs wherever they are in a message', () => {
    expect(redactUrl("fatal: unable to access 'https://me:s3cret@host/x/': 401")).toBe(
      "fatal: unable to access 'https://me@host/x/': 401",
    );
  });
});

describe('resolveRepoCreds', () => {
  let scratch: string | undefined;
  afterEach(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
    scratch = undefined;
  });

  it('names the option at fault: both given, an unreadable key, a file that is not a key', async () => {
    scratch = mkdtempSync(join(tmpdir(), 'dstack-repo-creds-'));
    const remote = 'https://127.0.0.1:9/private.git';
    await expect(resolveRepoCreds(remote, scratch, { token: 't', gitIdentity: 'k' })).rejects.toThrow(
      '--token and --git-identity: give one of them, not both',
    );
    await expect(resolveRepoCreds(remote, scratch, { gitIdentity: join(scratch, 'none') })).rejects.toThrow(
      `--git-identity: cannot read the SSH key ${join(scratch, 'none')}`,
    );
    writeFileSync(join(scratch, 'id.pub'), 'ssh-ed25519 AAAA me\n');
    await expect(resolveRepoCreds(remote, scratch, { gitIdentity: join(scratch, 'id.pub') })).rejects.toThrow(
      'is not a private SSH key',
    );
    await expect(resolveRepoCreds(remote, scratch, { token: ' ' })).rejects.toThrow(
      '--token: must not be empty',
    );
  });
});
