import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { chooseRuntime } from './choose-runtime.js';
import type { TaskRuntime } from './task-runtime.js';

/**
 * `auto` on a VM: cloud-init starts the shim while docker.service may still be starting. A
 * daemon that answers only `GET /version` (all the choice asks) stands in for dockerd on a unix
 * socket of the test's own.
 */
describe('chooseRuntime auto', () => {
  const directory = mkdtempSync(join(tmpdir(), 'shim-choose-runtime-'));
  const socketPath = join(directory, 'docker.sock');
  const binDirectory = join(directory, 'bin');
  let daemon: Server | undefined;
  const runtimes: TaskRuntime[] = [];

  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  afterEach(async () => {
    for (const runtime of runtimes.splice(0)) await (runtime as { close?(): Promise<void> }).close?.();
    await new Promise<void>((resolve) => (daemon ? daemon.close(() => resolve()) : resolve()));
    daemon = undefined;
  });

  function startDaemon(): Promise<void> {
    daemon = createServer((_request, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ ApiVersion: '1.41' }));
    });
    return new Promise((resolve) => daemon?.listen(socketPath, resolve));
  }

  function installDockerd(): void {
    mkdirSync(binDirectory, { recursive: true });
    writeFileSync(join(binDirectory, 'dockerd'), '#!/bin/sh\n', { mode: 0o755 });
  }

  async function choose(timeoutMs: number, lines: string[]) {
    const runtime = await chooseRuntime('auto', {
      dockerSocket: socketPath,
      searchPath: binDirectory,
      dockerStartTimeoutMs: timeoutMs,
      log: (line) => lines.push(line),
    });
    runtimes.push(runtime);
    return runtime;
  }

  it('chooses processes at once on a host without Docker', async () => {
    rmSync(binDirectory, { recursive: true, force: true });
    const lines: string[] = [];
    const runtime = await choose(60_000, lines);
    expect(runtime.name).toBe('process');
    expect(lines.join('\n')).not.toContain('waiting');
  });

  it('waits for an installed daemon that starts after the shim, then runs jobs in containers', async () => {
    installDockerd();
    const lines: string[] = [];
    const choosing = choose(60_000, lines);
    // The daemon starts once the shim is waiting for it (not after a guessed delay).
    await vi.waitFor(
      () => expect(lines.join('\n')).toContain('Docker is installed but does not answer yet'),
      {
        timeout: 30_000,
        interval: 20,
      },
    );
    await startDaemon();
    const runtime = await choosing;
    expect(runtime.name).toBe('docker');
    expect(lines[0]).toContain('Docker is installed but does not answer yet');
  });

  it('falls back to processes when the installed daemon never answers, saying why', async () => {
    installDockerd();
    const lines: string[] = [];
    const runtime = await choose(1_200, lines);
    expect(runtime.name).toBe('process');
    expect(lines.at(-1)).toMatch(/no Docker \(.*docker\.sock/);
  });
});
