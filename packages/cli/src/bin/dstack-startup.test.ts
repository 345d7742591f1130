/**
 * `dstack --help` loads the command definitions only: the modules a command needs (zod schemas
 * of @dstack/core, undici, ssh2, the server) load when it runs. Which modules load is read with
 * a module loader hook (`module.register`) that writes every URL it loads to a file.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_TEST_TIMEOUT_MS } from '../__fixtures__/cli-harness.js';

const bin = fileURLToPath(new URL('../../dist/bin/dstack.js', import.meta.url));

const HOOKS = `import { appendFileSync } from 'node:fs';
export async function load(url, context, nextLoad) {
  appendFileSync(process.env.DSTACK_TEST_LOADED_MODULES, url + '\\n');
  return nextLoad(url, context);
}
`;

let dir: string;
let registerHooks: string;

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} does not exist: run \`pnpm build\` before these tests`);
  dir = mkdtempSync(join(tmpdir(), 'dstack-startup-'));
  writeFileSync(join(dir, 'hooks.mjs'), HOOKS);
  registerHooks = join(dir, 'register.mjs');
  writeFileSync(
    registerHooks,
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`,
  );
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

let runs = 0;

/** Runs the bin with `args`; resolves with the module URLs it loaded and its output. */
function loadedModules(args: string[]): Promise<{ modules: string[]; stdout: string; stderr: string }> {
  runs += 1;
  const log = join(dir, `loaded-${runs}.txt`);
  writeFileSync(log, '');
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', pathToFileURL(registerHooks).href, bin, ...args],
      { env: { ...process.env, NO_COLOR: '1', DSTACK_TEST_LOADED_MODULES: log } },
      (_error, stdout, stderr) => {
        resolve({ modules: readFileSync(log, 'utf8').trim().split('\n'), stdout, stderr });
      },
    );
  });
}

const HEAVY = /zod|undici|ssh2|yaml|\/packages\/(core|server|catalog)\/|@dstack\/(core|server|catalog)/;

describe('dstack startup', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it.each(['--help', 'ps --help', 'apply --help'])('%s loads no command implementation', async (command) => {
    const { modules, stdout } = await loadedModules(command.split(' '));
    expect(stdout).toContain('Usage: dstack');
    expect(modules.some((url) => url.endsWith('/bin/dstack.js'))).toBe(true);
    expect(modules.filter((url) => HEAVY.test(url))).toEqual([]);
  });

  it('loads a command implementation when the command runs', async () => {
    const file = join(dir, 'app.dstack.yml');
    writeFileSync(file, 'type: task\ncommands: [echo]\n');
    const { modules, stderr } = await loadedModules(['validate', '-f', file]);
    expect(stderr).toBe('');
    // The hook sees ES modules; @dstack/core is one (zod too), so this shows the hook works.
    expect(modules.filter((url) => HEAVY.test(url)).length).toBeGreaterThan(0);
  });
});
