import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { VastaiContainers } from './vastai-docker-containers.js';
import type { VastaiEmulator } from './vastai-emulator.js';
import { vastai } from './vastai-emulator.test.helpers.js';
import { parseVastaiEmulatorArguments, runVastaiEmulatorCommand } from './vastai-emulator-command.js';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'vastai-emulator-command-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

interface ServerConfig {
  projects: {
    name: string;
    backends: { type: string; creds: { type: string; api_key: string }; endpoint_url: string }[];
  }[];
}

/** Containers that record being closed; rentals never reach them in this test. */
class ClosableContainers implements VastaiContainers {
  closed = false;
  start(): Promise<never> {
    return Promise.reject(new Error('not used'));
  }
  async stop(): Promise<void> {}
  async remove(): Promise<void> {}
  async close(): Promise<void> {
    this.closed = true;
  }
}

describe('emulator vastai', () => {
  it('writes a server config.yml pointing project main at the emulator, runs until stopped, closes its containers', async () => {
    const file = join(directory, 'config.yml');
    const containers = new ClosableContainers();
    const lines: string[] = [];
    const stop = new AbortController();
    let ready: (emulator: VastaiEmulator) => void = () => {};
    const started = new Promise<VastaiEmulator>((resolve) => {
      ready = resolve;
    });
    const running = runVastaiEmulatorCommand(
      ['--server-config', file, '--fault', 'RATE_LIMITED:destroy', '--fault', 'SLOW_RESPONSE:search'],
      {
        containers,
        signal: stop.signal,
        log: (line) => lines.push(line),
        onReady: (emulator) => ready(emulator),
      },
    );
    const emulator = await started;

    const config = parse(await readFile(file, 'utf8')) as ServerConfig;
    expect(config).toEqual({
      projects: [
        {
          name: 'main',
          backends: [
            {
              type: 'vastai',
              creds: { type: 'api_key', api_key: emulator.apiKey },
              endpoint_url: emulator.url,
            },
          ],
        },
      ],
    });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(lines[0]).toMatch(/^Vast\.ai emulator listening on http:\/\/127\.0\.0\.1:\d+/);
    expect(lines[1]).toContain('a Docker container per rental');
    expect(emulator.faults()).toEqual([
      expect.objectContaining({ code: 'RATE_LIMITED', route: 'destroy', everyNth: 2 }),
      expect.objectContaining({ code: 'SLOW_RESPONSE', route: 'search' }),
    ]);
    // The config's key works against the config's endpoint.
    const backend = config.projects[0]?.backends[0];
    const user = await fetch(`${backend?.endpoint_url}/api/v0/users/current/`, {
      headers: { authorization: `Bearer ${backend?.creds.api_key}` },
    });
    expect(user.status).toBe(200);
    expect((await vastai(emulator, 'GET', '/api/v1/instances/')).body.instances).toEqual([]);

    stop.abort();
    await running;
    expect(containers.closed).toBe(true);
    expect(lines.at(-1)).toBe('Stopping (abort)');
    await expect(fetch(`${emulator.url}/_emulator/state`)).rejects.toThrow();
  });

  it('rejects bad arguments naming the flag', () => {
    expect(() => parseVastaiEmulatorArguments([])).toThrow(/--server-config FILE is required/);
    expect(() => parseVastaiEmulatorArguments(['--server-config', 'x', '--fault', 'NOPE'])).toThrow(
      /unknown code NOPE/,
    );
    expect(() =>
      parseVastaiEmulatorArguments(['--server-config', 'x', '--fault', 'RATE_LIMITED:nowhere']),
    ).toThrow(/route/);
    expect(() => parseVastaiEmulatorArguments(['--server-config', 'x', '--fault', 'OUTBID:search'])).toThrow(
      /route/,
    );
    expect(parseVastaiEmulatorArguments(['--server-config', 'c.yml', '--fault', 'OUTBID'])).toEqual({
      serverConfig: 'c.yml',
      port: 0,
      faults: [{ code: 'OUTBID' }],
    });
  });
});
