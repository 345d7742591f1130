import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigurationError, formatConfigurationError } from '@dstack/core';
import { createFakeBackendPlugin } from '@dstack/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateAesSecret } from '../security/encryption.js';
import { loadServerConfig, parseServerConfig, renderDefaultServerConfig } from './server-config.js';

const fake = createFakeBackendPlugin();
const resolvePlugin = async (type: string) => {
  if (type === 'fake') return fake;
  throw new ConfigurationError(`Unknown backend type "${type}"; known types: fake`);
};

async function loadError(serverDir: string): Promise<string> {
  const error = await loadServerConfig({ serverDir, resolvePlugin }).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!ConfigurationError.isInstance(error))
    throw new Error(`expected a ConfigurationError, got ${String(error)}`);
  return formatConfigurationError(error).replace(`${serverDir}/`, '');
}

describe('loadServerConfig', () => {
  let serverDir: string;
  beforeEach(() => {
    serverDir = mkdtempSync(join(tmpdir(), 'dstack-config-'));
  });
  afterEach(() => rmSync(serverDir, { recursive: true, force: true }));

  it('writes a commented default with project main when missing', async () => {
    const loaded = await loadServerConfig({ serverDir, defaultBackendTypes: ['local'] });
    expect(loaded.created).toBe(true);
    const text = readFileSync(join(serverDir, 'config.yml'), 'utf8');
    expect(text).toMatch(/^# dstack server configuration/);
    expect(loaded.config.projects).toEqual([{ name: 'main', backends: [{ type: 'local' }] }]);
    // A new server encrypts secrets at rest from the start.
    expect(loaded.config.encryption.keys).toEqual([
      { type: 'aes', name: expect.stringMatching(/^key-[0-9a-f]{8}$/), secret: expect.any(String) },
    ]);
    expect((await loadServerConfig({ serverDir })).created).toBe(false);
  });

  it('creates a missing server directory 0700 and config.yml 0600, and closes an existing config.yml to others', async () => {
    const nested = join(serverDir, 'new', 'server');
    await loadServerConfig({ serverDir: nested, defaultBackendTypes: [] });
    expect(statSync(nested).mode & 0o777).toBe(0o700);
    expect(statSync(join(nested, 'config.yml')).mode & 0o777).toBe(0o600);

    writeFileSync(join(serverDir, 'config.yml'), 'projects: []\n', { mode: 0o644 });
    chmodSync(join(serverDir, 'config.yml'), 0o644);
    await loadServerConfig({ serverDir });
    expect(statSync(join(serverDir, 'config.yml')).mode & 0o777).toBe(0o600);
  });

  it('gives each written config.yml its own key', () => {
    const [first, second] = [renderDefaultServerConfig(), renderDefaultServerConfig()].map(
      (text) => parseServerConfig(text, 'config.yml').config.encryption.keys[0],
    );
    expect(first).toMatchObject({ type: 'aes' });
    expect(second).not.toEqual(first);
  });

  it('leaves the local backend out of the default when its package does not load', async () => {
    const loaded = await loadServerConfig({ serverDir, resolvePlugin });
    expect(loaded.config.projects).toEqual([{ name: 'main', backends: [] }]);
  });

  it('validates backend entries with their plugin and keeps the parsed config', async () => {
    const secret = generateAesSecret();
    writeFileSync(
      join(serverDir, 'config.yml'),
      `projects:
  - name: main
    backends:
      - type: fake
        creds:
          type: api_key
          api_key: valid-key
encryption:
  keys:
    - type: aes
      name: key1
      secret: ${secret}
`,
    );
    const loaded = await loadServerConfig({ serverDir, resolvePlugin });
    expect(loaded.config.projects[0]?.backends[0]).toEqual({
      type: 'fake',
      creds: { type: 'api_key', api_key: 'valid-key' },
    });
    expect(loaded.config.encryption.keys).toEqual([{ type: 'aes', name: 'key1', secret }]);
  });

  it('points at line and column of a bad field', async () => {
    writeFileSync(join(serverDir, 'config.yml'), 'projects:\n  - name: main\n    backendz: []\n');
    expect(await loadError(serverDir)).toBe("config.yml:3:5: projects[0].backendz: unknown field 'backendz'");

    writeFileSync(join(serverDir, 'config.yml'), 'projects:\n  - name: "bad name!"\n');
    expect(await loadError(serverDir)).toMatch(
      /^config\.yml:2:11: projects\[0\]\.name: project name must be/,
    );
  });

  it("points into a backend entry with the plugin's schema", async () => {
    writeFileSync(
      join(serverDir, 'config.yml'),
      'projects:\n  - name: main\n    backends:\n      - type: fake\n        creds:\n          type: api_key\n          api_key: 42\n',
    );
    expect(await loadError(serverDir)).toBe(
      'config.yml:7:20: projects[0].backends[0].creds.api_key: expected string, got 42',
    );
    writeFileSync(
      join(serverDir, 'config.yml'),
      'projects:\n  - name: main\n    backends:\n      - type: nope\n',
    );
    expect(await loadError(serverDir)).toBe(
      'config.yml:4:15: projects[0].backends[0].type: Unknown backend type "nope"; known types: fake',
    );
  });

  it('rejects an AES secret that is not 32 bytes, and YAML syntax errors, with positions', async () => {
    writeFileSync(
      join(serverDir, 'config.yml'),
      'encryption:\n  keys:\n    - {type: aes, name: k, secret: c2hvcnQ=}\n',
    );
    expect(await loadError(serverDir)).toMatch(
      /^config\.yml:3:36: encryption\.keys\[0\]\.secret: .*32 bytes/,
    );
    writeFileSync(join(serverDir, 'config.yml'), 'projects: [\n');
    expect(await loadError(serverDir)).toMatch(/^config\.yml:\d+:\d+: invalid YAML/);
  });

  it('refuses an alias bomb and an oversized file with one positioned line', async () => {
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x]'];
    for (const [index, name] of ['b', 'c', 'd', 'e'].entries()) {
      const previous = String.fromCharCode(97 + index);
      levels.push(`${name}: &${name} [${Array(9).fill(`*${previous}`).join(', ')}]`);
    }
    writeFileSync(join(serverDir, 'config.yml'), `${levels.join('\n')}\nprojects: []\n`);
    expect(await loadError(serverDir)).toBe(
      'config.yml:5:8: invalid YAML: alias *d expands the document too much (aliases may repeat content at most 100 times)',
    );
    writeFileSync(join(serverDir, 'config.yml'), `# ${'x'.repeat(2 * 1024 * 1024)}\nprojects: []\n`);
    expect(await loadError(serverDir)).toBe(
      'config.yml: the file is 2 MiB, over the 1 MiB limit for YAML files',
    );
  });
});
