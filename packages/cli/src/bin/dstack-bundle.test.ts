/**
 * The `dstack` users get: the bundle package.json's `bin` names (scripts/bundle.mjs). It answers
 * as the tsc build does, and a command loads only its own chunks: `dstack ps` builds the API
 * models, not the configuration schemas `dstack validate` and `dstack apply` need.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRun } from '../__fixtures__/api-objects.js';
import { CLI_TEST_TIMEOUT_MS, CliHarness } from '../__fixtures__/cli-harness.js';
import { FakeDstackServer } from '../__fixtures__/fake-dstack-server.js';
import { LoadedModulesHook } from '../__fixtures__/loaded-modules.js';

const packageDirectory = fileURLToPath(new URL('../../', import.meta.url));
const manifest = JSON.parse(readFileSync(join(packageDirectory, 'package.json'), 'utf8')) as {
  version: string;
  bin: { dstack: string };
};
const bundleBin = join(packageDirectory, manifest.bin.dstack);

let server: FakeDstackServer;
let built: CliHarness;
let bundled: CliHarness;
let hook: LoadedModulesHook;

beforeAll(async () => {
  hook = new LoadedModulesHook();
  server = await FakeDstackServer.start({
    handlers: { 'runs/list': () => [makeRun({ name: 'bundled-run', status: 'running' })] },
  });
  built = new CliHarness();
  bundled = new CliHarness({ bin: bundleBin, nodeArguments: hook.nodeArguments });
  for (const harness of [built, bundled]) await harness.useProject(server.url, server.token);
});

afterAll(async () => {
  built?.cleanUp();
  bundled?.cleanUp();
  await server?.close();
  hook?.remove();
});

/** Runs the bundle with `args`: its output, and the files of the bundle it loaded. */
async function runBundle(args: string[]) {
  const log = hook.newLog();
  const result = await bundled.run(args, log.environment);
  const bundleDirectory = pathToFileURL(dirname(dirname(bundleBin))).href;
  const files = log.read().filter((url) => url.startsWith(bundleDirectory));
  return { ...result, files: files.map((url) => fileURLToPath(url)) };
}

function loadedText(files: readonly string[]): string {
  return files.map((file) => readFileSync(file, 'utf8')).join('\n');
}

describe('the bundled dstack', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('prints the package version without loading zod or the API client', async () => {
    const { stdout, files } = await runBundle(['--version']);
    expect(stdout.trim()).toBe(manifest.version);
    expect(files[0]).toBe(bundleBin);
    const text = loadedText(files);
    expect(text).not.toContain('$ZodType');
    expect(text).not.toContain('DstackApiClient');
  });

  it('answers ps as the tsc build does, without the configuration schemas', async () => {
    const fromBundle = await runBundle(['ps']);
    const fromBuild = await built.run(['ps']);
    expect(fromBundle.stderr).toBe('');
    expect(fromBundle.stdout).toContain('bundled-run');
    expect(fromBundle.stdout).toBe(fromBuild.stdout);
    const text = loadedText(fromBundle.files);
    expect(text).toContain('$ZodType');
    expect(text).toContain('RunSchema');
    expect(text).not.toContain('serviceConfigurationSchema');
  });

  it('loads the configuration schemas for validate, and reports as the tsc build does', async () => {
    const file = join(hook.directory, 'app.dstack.yml');
    writeFileSync(file, 'type: service\nport: 80\ncommands: [serve]\nreplicas: -1\n');
    const fromBundle = await runBundle(['validate', '-f', file]);
    const fromBuild = await built.run(['validate', '-f', file]);
    expect(fromBundle.code).toBe(1);
    expect(fromBundle.stderr).toBe(fromBuild.stderr);
    expect(loadedText(fromBundle.files)).toContain('serviceConfigurationSchema');
  });
});
