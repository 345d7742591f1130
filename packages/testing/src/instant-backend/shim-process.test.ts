import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ShimClient } from '@dstack/shim';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type ShimProcess, startShimProcess } from './shim-process.js';

// A real process starts and stops; the limits only catch hangs.
vi.setConfig({ testTimeout: 30_000 });

describe('startShimProcess', () => {
  let home: string | undefined;
  let shim: ShimProcess | undefined;

  afterEach(async () => {
    await shim?.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it('runs the built dstack-shim as a child process until closed', async () => {
    home = await mkdtemp(join(tmpdir(), 'dstack-shim-process-'));
    shim = await startShimProcess({ homeDir: home });
    expect(shim.pid).not.toBe(process.pid);
    const client = new ShimClient(`http://127.0.0.1:${shim.port}`);
    expect(await client.healthcheck()).toMatchObject({ service: 'dstack-shim' });
    await shim.close();
    // Signal 0 checks for existence: the process is gone once close resolves.
    expect(() => process.kill(shim?.pid as number, 0)).toThrow();
    await expect(client.healthcheck()).rejects.toThrow();
  });
});
