import { execFile } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it, vi } from 'vitest';

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const run = promisify(execFile);

// A real Node process starts a shim; the limit only catches hangs.
vi.setConfig({ testTimeout: 30_000 });

describe('@dstack/testing/instant-backend', () => {
  it('loads in a plain Node process, outside vitest, as the bench runs it', async () => {
    // The root entry holds the conformance suite, which cannot be imported outside vitest.
    const script = `
      import { mkdtemp, rm } from 'node:fs/promises';
      import { tmpdir } from 'node:os';
      import { join } from 'node:path';
      import { createInstantBackend } from '@dstack/testing/instant-backend';
      const home = await mkdtemp(join(tmpdir(), 'dstack-instant-entry-'));
      const backend = await createInstantBackend({ homeDir: home });
      console.log(backend.plugin.type);
      await backend.close();
      await rm(home, { recursive: true, force: true });
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      cwd: packageDir,
    });
    expect(stdout.trim()).toBe('instant');
  });
});
