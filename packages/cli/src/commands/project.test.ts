import { readFileSync, statSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { makeUser } from '../__fixtures__/api-objects.js';
import { CLI_TEST_TIMEOUT_MS, CliHarness } from '../__fixtures__/cli-harness.js';
import { FakeDstackServer } from '../__fixtures__/fake-dstack-server.js';

let harness: CliHarness;
let server: FakeDstackServer;

beforeEach(async () => {
  harness = new CliHarness();
  server = await FakeDstackServer.start({ handlers: { 'users/get_my_user': () => makeUser('alice') } });
});

afterEach(async () => {
  harness.cleanUp();
  const problems = server.problems;
  await server.close();
  expect(problems).toEqual([]);
});

function readConfig(): { projects: { name: string; url: string; token: string; default: boolean }[] } {
  return parse(readFileSync(harness.configPath, 'utf8'));
}

describe('dstack project (built bin, fake server)', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('adds, lists, sets the default and deletes projects', async () => {
    const added = await harness.run([
      'project',
      'add',
      '--name',
      'main',
      '--url',
      server.url,
      '--token',
      server.token,
    ]);
    expect(added).toMatchObject({ code: 0, stdout: 'Added project main\n', stderr: '' });
    expect(server.requestsTo('users/get_my_user')[0]?.authorization).toBe(`Bearer ${server.token}`);
    expect(readConfig()).toEqual({
      projects: [{ name: 'main', url: server.url, token: server.token, default: true }],
    });
    expect(statSync(harness.configPath).mode & 0o777).toBe(0o600);

    const second = await harness.run([
      'project',
      'add',
      '--name',
      'other',
      '--url',
      'http://127.0.0.1:9',
      '--token',
      'secret-other',
      '--no-check',
    ]);
    expect(second.code).toBe(0);
    expect(readConfig().projects.map((project) => [project.name, project.default])).toEqual([
      ['main', true],
      ['other', false],
    ]);

    const listed = await harness.run(['project', 'list']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toContain(server.token);
    expect(listed.stdout).not.toContain('secret-other');
    expect(listed.stdout.split('\n')).toEqual([
      expect.stringMatching(/^NAME\s+URL\s+USER\s+DEFAULT$/),
      expect.stringMatching(new RegExp(`^main\\s+${server.url}\\s+alice\\s+yes$`)),
      expect.stringMatching(/^other\s+http:\/\/127\.0\.0\.1:9\s+-$/),
      '',
    ]);

    const switched = await harness.run(['project', 'set-default', 'other']);
    expect(switched).toMatchObject({ code: 0, stderr: '' });
    expect(readConfig().projects.map((project) => [project.name, project.default])).toEqual([
      ['main', false],
      ['other', true],
    ]);

    const deleted = await harness.run(['project', 'delete', 'other', '-y']);
    expect(deleted).toMatchObject({ code: 0, stdout: 'Deleted project other\n' });
    expect(readConfig().projects.map((project) => project.name)).toEqual(['main']);
  });

  it('rejects a token the server does not accept and saves nothing', async () => {
    const result = await harness.run([
      'project',
      'add',
      '--name',
      'main',
      '--url',
      server.url,
      '--token',
      'nope',
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error: invalid token for project main');
    expect(() => statSync(harness.configPath)).toThrow();
  });

  it('asks before replacing a project with another token, unless -y', async () => {
    await harness.useProject(server.url, 'old-token');
    const refused = await harness.run([
      'project',
      'add',
      '--name',
      'main',
      '--url',
      server.url,
      '--token',
      server.token,
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('pass -y');
    expect(readConfig().projects[0]?.token).toBe('old-token');
    const replaced = await harness.run([
      'project',
      'add',
      '--name',
      'main',
      '--url',
      server.url,
      '--token',
      server.token,
      '-y',
    ]);
    expect(replaced).toMatchObject({ code: 0, stdout: 'Updated project main\n' });
    expect(readConfig().projects[0]).toEqual({
      name: 'main',
      url: server.url,
      token: server.token,
      default: true,
    });
  });

  it('fails on an unknown project', async () => {
    const result = await harness.run(['project', 'set-default', 'ghost']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe("error: project 'ghost' is not configured; see dstack project list\n");
  });

  it('explains that no project is configured', async () => {
    const result = await harness.run(['ps']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('error: no project is configured');
  });
});
