import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);
const SOURCE = fileURLToPath(new URL('.', import.meta.url));

/**
 * `pnpm bench` runs its modules with tsx, outside vitest: a module that pulls in vitest (the
 * testing package's root carries the conformance suite) breaks the whole bench while every test
 * passes. Each module is imported as `pnpm bench` would; main.ts is left out (importing it runs
 * the benchmarks), as are the scripts of `scripts/`, which run when loaded.
 */
it('loads every bench module outside vitest', async () => {
  const modules = readdirSync(SOURCE).filter(
    (name) => name.endsWith('.ts') && !name.endsWith('.test.ts') && name !== 'main.ts',
  );
  const script = modules.map((name) => `await import(${JSON.stringify(`./src/${name}`)});`).join('\n');
  const { stderr } = await run(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '--eval', script],
    {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      timeout: 120_000,
    },
  );
  expect(stderr).not.toMatch(/Error/);
}, 150_000);
