/**
 * `emulator azure --server-config FILE [--port N] [--fault CODE[:VM_SIZE]]...`: starts the Azure
 * emulator on 127.0.0.1 and its sizes' catalog (gpuhunt's v3 layout, over HTTP), writes FILE as a
 * complete dstack server `config.yml` (project `main` with an `azure` backend pointed at the
 * emulator: its tenant, subscription, service principal, endpoints and certificate; `catalog.url`
 * the emulator's catalog), and runs until SIGINT/SIGTERM (or `signal`), terminating its hosts.
 */
import { stringify } from 'yaml';
import {
  type EmulatorCommandArguments,
  type EmulatorCommandOptions,
  parseEmulatorArguments,
  runEmulatorCommand,
} from '../emulator-command.js';
import { type PublishedCatalogServer, servePublishedCatalog } from '../published-catalog-server.js';
import { type AzureEmulator, type AzureEmulatorOptions, startAzureEmulator } from './azure-emulator.js';
import { type AzureFault, parseAzureFaultFlag } from './azure-emulator-faults.js';

export const AZURE_EMULATOR_USAGE =
  'Usage: emulator azure --server-config FILE [--port N] [--fault CODE[:VM_SIZE]]... [--no-hosts]';

export interface AzureEmulatorCommandOptions extends EmulatorCommandOptions<AzureEmulatorWithCatalog> {
  /** Other emulator settings (timeline, sizes…); the command line wins for port and faults. */
  emulator?: Omit<AzureEmulatorOptions, 'hosts' | 'port' | 'faults'>;
}

export type AzureEmulatorCommandArguments = EmulatorCommandArguments<AzureFault>;

/** The emulator and the catalog of its sizes the server plans from. */
export interface AzureEmulatorWithCatalog extends AzureEmulator {
  readonly catalog: PublishedCatalogServer;
}

/** Parses the arguments after `azure`; the error names the bad flag. */
export function parseAzureEmulatorArguments(argv: readonly string[]): AzureEmulatorCommandArguments {
  return parseEmulatorArguments(argv, AZURE_EMULATOR_USAGE, parseAzureFaultFlag);
}

/** An `azure` backend entry of the server's `config.yml` pointed at `emulator`. */
export function azureEmulatorBackend(emulator: AzureEmulator) {
  return {
    type: 'azure',
    tenant_id: emulator.tenantId,
    subscription_id: emulator.subscriptionId,
    regions: [...emulator.regions],
    endpoint_url: emulator.url,
    authority_host: emulator.url,
    ca_certificates: emulator.certificate,
    creds: {
      type: 'client',
      client_id: emulator.servicePrincipal.clientId,
      client_secret: emulator.servicePrincipal.clientSecret,
    },
  };
}

/** Starts the emulator and serves its catalog; `close` stops both. */
export async function startAzureEmulatorWithCatalog(
  options: AzureEmulatorOptions = {},
): Promise<AzureEmulatorWithCatalog> {
  const emulator = await startAzureEmulator(options);
  const catalog = await servePublishedCatalog('azure', emulator.data.catalogItems());
  return {
    ...emulator,
    catalog,
    async close() {
      await catalog.close();
      await emulator.close();
    },
  };
}

/** The dstack server `config.yml` that points project `main`'s `azure` backend and the catalog at `emulator`. */
export function azureEmulatorServerConfig(emulator: AzureEmulatorWithCatalog): string {
  return stringify({
    catalog: { url: emulator.catalog.url },
    projects: [{ name: 'main', backends: [azureEmulatorBackend(emulator)] }],
  });
}

/** Runs the command until it is stopped; resolves once the emulator and its hosts are down. */
export function runAzureEmulatorCommand(
  argv: readonly string[],
  options: AzureEmulatorCommandOptions = {},
): Promise<void> {
  const args = parseAzureEmulatorArguments(argv);
  return runEmulatorCommand(
    args,
    {
      start: () =>
        startAzureEmulatorWithCatalog({
          ...options.emulator,
          port: args.port,
          hosts: options.hosts,
          faults: args.faults,
        }),
      serverConfig: azureEmulatorServerConfig,
      listening: (emulator) =>
        `Azure emulator listening on ${emulator.url} (tenant ${emulator.tenantId}, subscription ${emulator.subscriptionId}; catalog at ${emulator.catalog.url})`,
    },
    options,
  );
}
