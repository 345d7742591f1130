import { describe, expect, it } from 'vitest';
import { parseConfiguration, validateConfiguration } from '../configuration/index.js';
import { ConfigurationError } from '../errors.js';
import { CreateProjectRequestSchema, CreateUserRequestSchema } from './api-requests.js';
import { isValidProjectName, isValidRepoId, isValidResourceName, isValidUsername } from './resource-names.js';

/** Names no resource may have: control characters, escape sequences, slashes, spaces, a megabyte. */
const HOSTILE_NAMES = [
  '',
  'nul\u0000name',
  'crlf\r\nname',
  'tab\tname',
  '\u001b[31mred',
  'del\u007f',
  'c1\u009b2J',
  '../etc',
  'a/b',
  'a b',
  'x'.repeat(1024 * 1024),
];

function configurationError(run: () => unknown): ConfigurationError {
  try {
    run();
  } catch (error) {
    if (ConfigurationError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a ConfigurationError');
}

describe('name rules', () => {
  it('repo ids take any printable text but no control or format character', () => {
    for (const id of ['app-1a2b3c4d', 'mon projet été-1a2b3c4d', 'a', 'x'.repeat(300)]) {
      expect(isValidRepoId(id), id).toBe(true);
    }
    const hostile = HOSTILE_NAMES.filter((name) => !['../etc', 'a/b', 'a b'].includes(name));
    for (const id of [...hostile, 'bidi\u202eexe', 'zero\u200bwidth', 'lone\ud800', 'x'.repeat(301)]) {
      expect(isValidRepoId(id), JSON.stringify(id.slice(0, 20))).toBe(false);
    }
  });

  it("resource names follow dstack's is_valid_dstack_resource_name", () => {
    for (const name of ['my-fleet', 'trl-train-deepseek-v2', 'ab', `a${'b'.repeat(40)}`]) {
      expect(isValidResourceName(name), name).toBe(true);
    }
    for (const name of [...HOSTILE_NAMES, 'a', 'My-fleet', '1fleet', 'my_fleet', `a${'b'.repeat(41)}`]) {
      expect(isValidResourceName(name), JSON.stringify(name.slice(0, 20))).toBe(false);
    }
  });

  it('project and user names allow what dstack allows, and none of the hostile names', () => {
    expect(['main', 'Team_B-2', 'x'.repeat(50)].every(isValidProjectName)).toBe(true);
    expect(['alice', 'Alice_2', '-x', 'x'.repeat(60)].every(isValidUsername)).toBe(true);
    for (const name of HOSTILE_NAMES) {
      expect(isValidProjectName(name)).toBe(false);
      expect(isValidUsername(name)).toBe(false);
    }
    expect(isValidProjectName('x'.repeat(51))).toBe(false);
    expect(isValidUsername('x'.repeat(61))).toBe(false);
    expect(isValidUsername('alice.smith')).toBe(false);
  });

  it('the API request schemas name the field and do not repeat the value', () => {
    const project = CreateProjectRequestSchema.safeParse({ project_name: 'evil\u001b[2J' });
    expect(project.error?.issues).toEqual([expect.objectContaining({ path: ['project_name'] })]);
    expect(project.error?.issues[0]?.message).not.toContain('evil');
    const user = CreateUserRequestSchema.safeParse({ username: 'a/b' });
    expect(user.error?.issues).toEqual([expect.objectContaining({ path: ['username'] })]);
  });
});

describe('the name of a configuration', () => {
  /** The rest of a valid configuration of each type, after its `name`. */
  const REST: Record<string, string> = {
    fleet: 'nodes: 1\n',
    volume: 'backend: aws\nregion: eu-west-1\nsize: 100GB\n',
    gateway: 'backend: aws\nregion: eu-west-1\ndomain: example.com\n',
    task: 'commands: ["true"]\n',
    service: 'port: 80\ncommands: ["true"]\n',
    'dev-environment': 'ide: vscode\n',
  };

  it.each(Object.keys(REST))('is checked in a %s configuration, at its line and column', (type) => {
    const text = `type: ${type}\nname: "../evil\\e[31m"\n${REST[type]}`;
    const error = configurationError(() => parseConfiguration(text, { path: 'app.dstack.yml' }));
    expect(error.path).toEqual(['name']);
    expect([error.line, error.column]).toEqual([2, 7]);
    expect(error.message).toMatch(/expected a name of 2-41 lowercase letters, digits and dashes/);
    const valid = parseConfiguration(text.replace('"../evil\\e[31m"', 'my-name-2'), { path: 'x' });
    expect((valid as { name?: string }).name).toBe('my-name-2');
  });

  it('is checked when a client sends the configuration as JSON', () => {
    for (const name of HOSTILE_NAMES) {
      const error = configurationError(() => validateConfiguration({ type: 'fleet', name, nodes: 1 }));
      expect(error.path).toEqual(['name']);
      expect(error.message.length).toBeLessThan(200);
    }
  });
});
