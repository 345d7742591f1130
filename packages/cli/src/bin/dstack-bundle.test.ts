/**
 * The `dstack` users get: the launcher package.json's `bin` names and the bundle it runs through
 * V8's code cache (scripts/bundle.mjs). It answers as the tsc build does; a command runs only its
 * own modules (`dstack ps` builds the API models, not the configuration schemas `dstack validate`
 * and `dstack apply` need); the cache is written after a command and taken by the next start.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRun } from '../__fixtures__/api-objects.js';
import { CLI_TEST_TIMEOUT_MS, CliHarness } from '../__fixtures__/cli-harness.js';
import { ExecutedModulesLog } from '../__fixtures__/executed-modules.js';
import { FakeDstackServer } from '../__fixtures__/fake-dstack-server.js';

const packageDirectory = fileURLToPath(new URL('../../', import.meta.url));
const manifest = JSON.parse(readFileSync(join(packageDirectory, 'package.json'), 'utf8')) as {
  version: string;
  bin: { dstack: string };
};
const bundleBin = join(packageDirectory, manifest.bin.dstack);

const ZOD = /\/zod\/v4\/core\/core\.js$/;
const API_CLIENT = /^src\/api\/client\.ts$/;
const RUN_MODELS = /\/core\/dist\/models\/api-runs\.js$/;
const SERVICE_CONFIGURATION = /\/core\/dist\/configuration\/service-configuration\.js$/;

let server: FakeDstackServer;
let built: CliHarness;
let bundled: CliHarness;
let functionEvents: ExecutedModulesLog;

beforeAll(async () => {
  functionEvents = new ExecutedModulesLog();
  server = await FakeDstackServer.start({
    handlers: { 'runs/list': () => [makeRun({ name: 'bundled-run', status: 'running' })] },
  });
  built = new CliHarness();
  bundled = new CliHarness({ bin: bundleBin });
  for (const harness of [built, bundled]) await harness.useProject(server.url, server.token);
});

afterAll(async () => {
  built?.cleanUp();
  bundled?.cleanUp();
  await server?.close();
  functionEvents?.remove();
});

/** Runs the bundle with `args` (its code cache in `cacheHome`): its output, and the functions it ran. */
async function runBundle(args: string[], cacheHome = join(bundled.home, 'cache')) {
  const log = functionEvents.newLog();
  const harness = new CliHarness({ bin: bundleBin, nodeArguments: log.nodeArguments });
  try {
    await harness.useProject(server.url, server.token);
    const result = await harness.run(args, { XDG_CACHE_HOME: cacheHome });
    return { ...result, functions: log.read() };
  } finally {
    harness.cleanUp();
  }
}

const ran = (functions: readonly string[], module: RegExp) => functions.some((name) => module.test(name));

interface CacheFile {
  path: string;
  inode: number;
  bytes: Buffer;
}

/** The code cache files under `cacheHome`, by name. */
function cacheFiles(cacheHome: string): Map<string, CacheFile> {
  const versions = join(cacheHome, 'dstack', 'cli-code-cache');
  const files = new Map<string, CacheFile>();
  for (const version of readdirSync(versions)) {
    for (const name of readdirSync(join(versions, version))) {
      const path = join(versions, version, name);
      files.set(name, { path, inode: statSync(path).ino, bytes: readFileSync(path) });
    }
  }
  return files;
}

describe('the bundled dstack', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('prints the package version without running zod or the API client', async () => {
    const { stdout, functions } = await runBundle(['--version']);
    expect(stdout.trim()).toBe(manifest.version);
    expect(ran(functions, ZOD)).toBe(false);
    expect(ran(functions, API_CLIENT)).toBe(false);
  });

  it('answers ps as the tsc build does, without the configuration schemas', async () => {
    const fromBundle = await runBundle(['ps']);
    const fromBuild = await built.run(['ps']);
    expect(fromBundle.stderr).toBe('');
    expect(fromBundle.stdout).toContain('bundled-run');
    expect(fromBundle.stdout).toBe(fromBuild.stdout);
    expect(ran(fromBundle.functions, RUN_MODELS)).toBe(true);
    expect(ran(fromBundle.functions, SERVICE_CONFIGURATION)).toBe(false);
  });

  it('runs the configuration schemas for validate, and reports as the tsc build does', async () => {
    const file = join(functionEvents.directory, 'app.dstack.yml');
    writeFileSync(file, 'type: service\nport: 80\ncommands: [serve]\nreplicas: -1\n');
    const fromBundle = await runBundle(['validate', '-f', file]);
    const fromBuild = await built.run(['validate', '-f', file]);
    expect(fromBundle.code).toBe(1);
    expect(fromBundle.stderr).toBe(fromBuild.stderr);
    expect(ran(fromBundle.functions, SERVICE_CONFIGURATION)).toBe(true);
  });

  it("writes a command's code cache after it, takes it next time, and replaces one V8 refuses", async () => {
    const cacheHome = join(bundled.home, 'cache-of-ps');
    const ps = () => bundled.run(['ps'], { XDG_CACHE_HOME: cacheHome });
    const first = await ps();
    expect(first.stdout).toContain('bundled-run');
    const written = cacheFiles(cacheHome).get('ps.bin');
    expect(written?.bytes.length).toBeGreaterThan(0);

    // Taken: the launcher writes a cache only when V8 did not take the one there.
    expect(await ps()).toEqual(first);
    expect(cacheFiles(cacheHome).get('ps.bin')?.inode).toBe(written?.inode);

    writeFileSync(written!.path, 'not a code cache');
    expect(await ps()).toEqual(first);
    expect(cacheFiles(cacheHome).get('ps.bin')?.bytes.toString()).not.toBe('not a code cache');
  });

  it('answers when its cache cannot be written, and writes none for --help', async () => {
    const notADirectory = join(bundled.home, '.dstack', 'config.yml');
    const result = await bundled.run(['ps'], { XDG_CACHE_HOME: notADirectory });
    expect(result.stderr).toBe('');
    expect(result.stdout).toContain('bundled-run');

    const cacheHome = join(bundled.home, 'cache-of-help');
    const help = await bundled.run(['ps', '--help'], { XDG_CACHE_HOME: cacheHome });
    expect(help.stdout).toContain('Usage: dstack ps');
    expect(() => readdirSync(cacheHome)).toThrow(/ENOENT/);
  });
});
