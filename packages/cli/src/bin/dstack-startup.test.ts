/**
 * `dstack --help` loads the command definitions only: the modules a command needs (zod schemas
 * of @dstack/core, undici, ssh2, the server) load when it runs. Which modules load is read with
 * a module loader hook (`module.register`) that writes every URL it loads to a file.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_TEST_TIMEOUT_MS } from '../__fixtures__/cli-harness.js';
import { LoadedModulesHook } from '../__fixtures__/loaded-modules.js';

const bin = fileURLToPath(new URL('../../dist/bin/dstack.js', import.meta.url));

let dir: string;
let hook: LoadedModulesHook;

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} does not exist: run \`pnpm build\` before these tests`);
  dir = mkdtempSync(join(tmpdir(), 'dstack-startup-'));
  hook = new LoadedModulesHook();
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  hook.remove();
});

/** Runs the bin with `args`; resolves with the module URLs it loaded and its output. */
function loadedModules(args: string[]): Promise<{ modules: string[]; stdout: string; stderr: string }> {
  const log = hook.newLog();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...hook.nodeArguments, bin, ...args],
      { env: { ...process.env, NO_COLOR: '1', ...log.environment } },
      (_error, stdout, stderr) => {
        resolve({ modules: log.read(), stdout, stderr });
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
