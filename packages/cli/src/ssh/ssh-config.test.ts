import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatRunHostBlock, installRunHost, upsertHostBlock, withInclude } from './ssh-config.js';

const HOST_OPTIONS = {
  runName: 'my-run',
  projectName: 'main',
  identityFile: '/home/me/.dstack/ssh/id_rsa',
  dstackCommand: ['/usr/bin/node', '/opt/dstack cli/bin/dstack.js'],
};

describe('formatRunHostBlock', () => {
  it('runs this CLI as the ProxyCommand, quoting paths for the shell', () => {
    expect(formatRunHostBlock(HOST_OPTIONS)).toBe(
      [
        'Host my-run',
        '  User root',
        '  IdentityFile /home/me/.dstack/ssh/id_rsa',
        '  IdentitiesOnly yes',
        '  StrictHostKeyChecking no',
        '  UserKnownHostsFile /dev/null',
        '  LogLevel ERROR',
        "  ProxyCommand /usr/bin/node '/opt/dstack cli/bin/dstack.js' ssh-proxy --project main my-run",
      ].join('\n'),
    );
  });

  it("doubles '%' (OpenSSH's token character) and quotes an identity file with spaces", () => {
    const block = formatRunHostBlock({
      ...HOST_OPTIONS,
      identityFile: '/home/a b/%id',
      projectName: "it's 100%",
    });
    expect(block).toContain('  IdentityFile "/home/a b/%%id"\n');
    expect(block).toContain(`ssh-proxy --project 'it'\\''s 100%%' my-run`);
  });
});

describe('upsertHostBlock', () => {
  const other = 'Host other\n  User root\n  ProxyCommand old other';
  const old = 'Host my-run\n  User root\n  ProxyCommand old my-run';

  it('appends the block to an empty or unrelated configuration', () => {
    expect(upsertHostBlock('', 'my-run', 'Host my-run\n  X y')).toBe('Host my-run\n  X y\n');
    expect(upsertHostBlock(`${other}\n`, 'my-run', 'Host my-run\n  X y')).toBe(
      `${other}\n\nHost my-run\n  X y\n`,
    );
  });

  it("replaces the run's block in place and keeps the others", () => {
    const text = `${other}\n\n${old}\n\nHost last\n  User root\n`;
    expect(upsertHostBlock(text, 'my-run', 'Host my-run\n  X y')).toBe(
      `${other}\n\nHost my-run\n  X y\n\nHost last\n  User root\n`,
    );
  });

  it('does not take a block for several hosts, or for a longer name, as the run', () => {
    const text = 'Host my-run other\n  User a\n\nHost my-run-2\n  User b\n';
    expect(upsertHostBlock(text, 'my-run', 'Host my-run\n  X y')).toBe(`${text}\nHost my-run\n  X y\n`);
  });
});

describe('withInclude', () => {
  it('puts the Include first', () => {
    expect(withInclude('Host a\n  User b\n', '/h/.dstack/ssh/config')).toBe(
      'Include /h/.dstack/ssh/config\n\nHost a\n  User b\n',
    );
  });

  it('leaves a configuration that already includes the file alone', () => {
    expect(withInclude('Include /h/.dstack/ssh/config\n', '/h/.dstack/ssh/config')).toBeUndefined();
    expect(withInclude('include "/h/x y"\nHost a\n', '/h/x y')).toBeUndefined();
  });
});

describe('installRunHost', () => {
  let home: string;

  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'dstack-ssh-config-'));
  });

  afterEach(() => {
    rmSync(home, { recursive: true, force: true });
  });

  it("creates both files, then updates the run's block without repeating the Include", async () => {
    const path = await installRunHost({ ...HOST_OPTIONS, home });
    expect(path).toBe(join(home, '.dstack', 'ssh', 'config'));
    expect(readFileSync(path, 'utf8')).toBe(`${formatRunHostBlock(HOST_OPTIONS)}\n`);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const userConfig = join(home, '.ssh', 'config');
    expect(readFileSync(userConfig, 'utf8')).toBe(`Include ${path}\n\n`);
    expect(statSync(userConfig).mode & 0o777).toBe(0o600);

    await installRunHost({ ...HOST_OPTIONS, runName: 'second', home });
    await installRunHost({ ...HOST_OPTIONS, projectName: 'other', home });
    const text = readFileSync(path, 'utf8');
    expect(text.match(/^Host /gm)).toHaveLength(2);
    expect(text).toContain('ssh-proxy --project other my-run');
    expect(text).toContain('ssh-proxy --project main second');
    expect(readFileSync(userConfig, 'utf8')).toBe(`Include ${path}\n\n`);
  });

  it("keeps the user's own configuration under the Include", async () => {
    mkdirSync(join(home, '.ssh'));
    writeFileSync(join(home, '.ssh', 'config'), 'Host box\n  HostName 10.0.0.1\n');
    const path = await installRunHost({ ...HOST_OPTIONS, home });
    expect(readFileSync(join(home, '.ssh', 'config'), 'utf8')).toBe(
      `Include ${path}\n\nHost box\n  HostName 10.0.0.1\n`,
    );
  });
});
