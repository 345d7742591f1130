/**
 * The `dstack` users get: the bundle package.json's `bin` names (scripts/bundle.mjs). It answers
 * as the tsc build does, and a command loads only its own chunks: `dstack ps` builds the API
 * models, not the configuration schemas `dstack validate` and `dstack apply` need.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRun } from '../__fixtures__/api-objects.js';
import { CLI_TEST_TIMEOUT_MS, CliHarness } from '../__fixtures__/cli-harness.js';
import { FakeDstackServer } from '../__fixtures__/fake-dstack-server.js';

const packageDirectory = fileURLToPath(new URL('../../', import.meta.url));
const manifest = JSON.parse(readFileSync(join(packageDirectory, 'package.json'), 'utf8')) as {
  version: string;
  bin: { dstack: string };
};
const bundleBin = join(packageDirectory, manifest.bin.dstack);

/** A loader hook that appends every module URL it loads to $DSTACK_TEST_LOADED_MODULES. */
const HOOKS = `import { appendFileSync } from 'node:fs';
export async function load(url, context, nextLoad) {
  appendFileSync(process.env.DSTACK_TEST_LOADED_MODULES, url + '\\n');
  return nextLoad(url, context);
}
`;

let dir: string;
let server: FakeDstackServer;
let built: CliHarness;
let bundled: CliHarness;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dstack-bundle-'));
  writeFileSync(join(dir, 'hooks.mjs'), HOOKS);
  const register = join(dir, 'register.mjs');
  writeFileSync(
    register,
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`,
  );
  server = await FakeDstackServer.start({
    handlers: { 'runs/list': () => [makeRun({ name: 'bundled-run', status: 'running' })] },
  });
  built = new CliHarness();
  bundled = new CliHarness({ bin: bundleBin, nodeArguments: ['--import', pathToFileURL(register).href] });
  for (const harness of [built, bundled]) await harness.useProject(server.url, server.token);
});

afterAll(async () => {
  built?.cleanUp();
  bundled?.cleanUp();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

let runs = 0;

/** Runs the bundle with `args`: its output, and the files of the bundle it loaded. */
async function runBundle(args: string[]) {
  runs += 1;
  const log = join(dir, `loaded-${runs}.txt`);
  writeFileSync(log, '');
  const result = await bundled.run(args, { DSTACK_TEST_LOADED_MODULES: log });
  const bundleDirectory = pathToFileURL(dirname(dirname(bundleBin))).href;
  const files = readFileSync(log, 'utf8')
    .split('\n')
    .filter((url) => url.startsWith(bundleDirectory));
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
    const file = join(dir, 'app.dstack.yml');
    writeFileSync(file, 'type: service\nport: 80\ncommands: [serve]\nreplicas: -1\n');
    const fromBundle = await runBundle(['validate', '-f', file]);
    const fromBuild = await built.run(['validate', '-f', file]);
    expect(fromBundle.code).toBe(1);
    expect(fromBundle.stderr).toBe(fromBuild.stderr);
    expect(loadedText(fromBundle.files)).toContain('serviceConfigurationSchema');
  });
});
