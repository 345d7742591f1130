import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { GcpEmulator } from './gcp-emulator.js';
import { jwtClient, RecordingHosts } from './gcp-emulator.test.helpers.js';
import { parseGcpEmulatorArguments, runGcpEmulatorCommand } from './gcp-emulator-command.js';
import type { ServiceAccountJson } from './gcp-oauth.js';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'gcp-emulator-command-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

interface ServerConfig {
  projects: {
    name: string;
    backends: {
      type: string;
      project_id: string;
      creds: { type: string; data: string };
      regions: string[];
      endpoint_url: string;
    }[];
  }[];
}

describe('emulator gcp', () => {
  it('writes a server config.yml pointing project main at the emulator, runs until stopped, closes its hosts', async () => {
    const file = join(directory, 'config.yml');
    const hosts = new RecordingHosts();
    const lines: string[] = [];
    const stop = new AbortController();
    let ready: (emulator: GcpEmulator) => void = () => {};
    const started = new Promise<GcpEmulator>((resolve) => {
      ready = resolve;
    });
    const running = runGcpEmulatorCommand(
      [
        '--server-config',
        file,
        '--fault',
        'ZONE_RESOURCE_POOL_EXHAUSTED:g2-standard-4',
        '--fault',
        'SLOW_NAT_IP',
      ],
      { hosts, signal: stop.signal, log: (line) => lines.push(line), onReady: (emulator) => ready(emulator) },
    );
    const emulator = await started;

    const config = parse(await readFile(file, 'utf8')) as ServerConfig;
    const backend = config.projects[0]?.backends[0];
    expect(config).toEqual({
      projects: [
        {
          name: 'main',
          backends: [
            {
              type: 'gcp',
              project_id: emulator.project,
              creds: { type: 'service_account', data: expect.any(String) },
              regions: ['us-central1', 'us-east1', 'us-west1', 'europe-west4', 'asia-east1'],
              endpoint_url: `${emulator.url}/compute/v1`,
            },
          ],
        },
      ],
    });
    const key = JSON.parse(backend?.creds.data ?? '{}') as ServiceAccountJson;
    expect(key).toMatchObject({
      type: 'service_account',
      project_id: emulator.project,
      token_uri: `${emulator.url}/token`,
    });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(lines[0]).toMatch(/^GCP emulator listening on http:\/\/127\.0\.0\.1:\d+/);
    expect(emulator.faults().map((fault) => fault.code)).toEqual([
      'ZONE_RESOURCE_POOL_EXHAUSTED',
      'SLOW_NAT_IP',
    ]);

    // The config's key and endpoint work with the real client library.
    const zones = await jwtClient(key).request<{ items: unknown[] }>({
      url: `${backend?.endpoint_url}/projects/${backend?.project_id}/zones`,
    });
    expect(zones.data.items.length).toBeGreaterThan(0);

    stop.abort();
    await running;
    expect(hosts.closed).toBe(true);
    expect(lines.at(-1)).toBe('Stopping (abort)');
    await expect(fetch(`${emulator.url}/_emulator/state`)).rejects.toThrow();
  });

  it('rejects bad arguments naming the flag', () => {
    expect(() => parseGcpEmulatorArguments([])).toThrow(/--server-config FILE is required/);
    expect(() => parseGcpEmulatorArguments(['--server-config', 'x', '--port', 'abc'])).toThrow(/--port/);
    expect(() => parseGcpEmulatorArguments(['--server-config', 'x', '--fault', 'Nope'])).toThrow(
      /unknown code Nope/,
    );
    expect(parseGcpEmulatorArguments(['--server-config', 'c.yml', '--port', '8123'])).toEqual({
      serverConfig: 'c.yml',
      port: 8123,
      faults: [],
    });
  });
});
