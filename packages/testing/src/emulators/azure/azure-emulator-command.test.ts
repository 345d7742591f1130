import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  type AzureEmulatorWithCatalog,
  parseAzureEmulatorArguments,
  runAzureEmulatorCommand,
} from './azure-emulator-command.js';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'azure-emulator-command-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('emulator azure', () => {
  it('writes a server config.yml pointing project main and the catalog at the emulator, runs until stopped', async () => {
    const file = join(directory, 'config.yml');
    const lines: string[] = [];
    const stop = new AbortController();
    let ready: (emulator: AzureEmulatorWithCatalog) => void = () => {};
    const started = new Promise<AzureEmulatorWithCatalog>((resolve) => {
      ready = resolve;
    });
    const running = runAzureEmulatorCommand(
      ['--server-config', file, '--fault', 'AllocationFailed:Standard_NC4as_T4_v3'],
      {
        signal: stop.signal,
        log: (line) => lines.push(line),
        onReady: (emulator) => ready(emulator),
      },
    );
    const emulator = await started;

    expect(parse(await readFile(file, 'utf8'))).toEqual({
      catalog: { url: emulator.catalog.url },
      projects: [
        {
          name: 'main',
          backends: [
            {
              type: 'azure',
              tenant_id: emulator.tenantId,
              subscription_id: emulator.subscriptionId,
              regions: ['eastus', 'eastus2', 'westeurope'],
              endpoint_url: emulator.url,
              authority_host: emulator.url,
              ca_certificates: emulator.certificate,
              creds: {
                type: 'client',
                client_id: emulator.servicePrincipal.clientId,
                client_secret: emulator.servicePrincipal.clientSecret,
              },
            },
          ],
        },
      ],
    });
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(lines[0]).toMatch(/^Azure emulator listening on https:\/\/127\.0\.0\.1:\d+/);
    expect(emulator.faults()).toMatchObject([{ code: 'AllocationFailed', vmSize: 'Standard_NC4as_T4_v3' }]);
    // The catalog is served in gpuhunt's v3 layout.
    const version = await fetch(`${emulator.catalog.url}/azure/version`);
    expect(version.status).toBe(200);

    stop.abort();
    await running;
    expect(lines.at(-1)).toBe('Stopping (abort)');
  });

  it('names a bad flag', () => {
    expect(() => parseAzureEmulatorArguments(['--server-config', 'x', '--fault', 'Nope'])).toThrow(
      /unknown code Nope/,
    );
  });
});
