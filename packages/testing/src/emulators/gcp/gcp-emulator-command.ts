/**
 * `emulator gcp --server-config FILE [--port N] [--fault CODE[:MACHINE_TYPE]]...`: starts the
 * GCP emulator on 127.0.0.1, writes FILE as a complete dstack server `config.yml` (project `main`
 * with a `gcp` backend pointed at the emulator: the service-account key whose `token_uri` is the
 * emulator's, and `endpoint_url` the Compute base URL), and runs until SIGINT/SIGTERM (or
 * `signal`), terminating its hosts on the way out.
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import type { EmulatedHosts } from '../emulated-hosts.js';
import { type GcpEmulator, type GcpEmulatorOptions, startGcpEmulator } from './gcp-emulator.js';
import { type GcpFault, parseGcpFaultFlag } from './gcp-emulator-faults.js';

export const GCP_EMULATOR_USAGE =
  'Usage: emulator gcp --server-config FILE [--port N] [--fault CODE[:MACHINE_TYPE]]... [--no-hosts]';

export interface GcpEmulatorCommandOptions {
  /** The machines instances boot; without, instances get made-up addresses. */
  hosts?: EmulatedHosts;
  /** Stops the command like SIGINT does (tests). */
  signal?: AbortSignal;
  /** Where the command's lines go. Default stdout. */
  log?: (line: string) => void;
  /** Called once the emulator listens and FILE is written. */
  onReady?: (emulator: GcpEmulator) => void;
  /** Other emulator settings (timeline, regions…); the command line wins for port and faults. */
  emulator?: Omit<GcpEmulatorOptions, 'hosts' | 'port' | 'host' | 'faults'>;
}

export interface GcpEmulatorCommandArguments {
  readonly serverConfig: string;
  readonly port: number;
  readonly faults: readonly GcpFault[];
}

/** Parses the arguments after `gcp`; the error names the bad flag. */
export function parseGcpEmulatorArguments(argv: readonly string[]): GcpEmulatorCommandArguments {
  let values: { 'server-config'?: string; port?: string; fault?: string[] };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        'server-config': { type: 'string' },
        port: { type: 'string' },
        fault: { type: 'string', multiple: true },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${GCP_EMULATOR_USAGE}`);
  }
  const serverConfig = values['server-config'];
  if (!serverConfig) throw new Error(`--server-config FILE is required\n${GCP_EMULATOR_USAGE}`);
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--port: expected a port number 0-65535, got ${JSON.stringify(values.port)}`);
  }
  return { serverConfig, port, faults: (values.fault ?? []).map(parseGcpFaultFlag) };
}

/**
 * A `gcp` backend entry of the server's `config.yml` pointed at `emulator`: its project, its
 * service-account key (as `data`, a JSON string), its regions and the Compute base URL.
 */
export function gcpEmulatorBackend(emulator: GcpEmulator) {
  return {
    type: 'gcp',
    project_id: emulator.project,
    creds: { type: 'service_account', data: JSON.stringify(emulator.serviceAccountJson()) },
    regions: [...emulator.regions],
    endpoint_url: emulator.computeUrl,
  };
}

/** The dstack server `config.yml` that points project `main`'s `gcp` backend at `emulator`. */
export function gcpEmulatorServerConfig(emulator: GcpEmulator): string {
  return stringify({ projects: [{ name: 'main', backends: [gcpEmulatorBackend(emulator)] }] });
}

/** Runs the command until it is stopped; resolves once the emulator and its hosts are down. */
export async function runGcpEmulatorCommand(
  argv: readonly string[],
  options: GcpEmulatorCommandOptions = {},
): Promise<void> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const args = parseGcpEmulatorArguments(argv);
  const emulator = await startGcpEmulator({
    ...options.emulator,
    host: '127.0.0.1',
    port: args.port,
    hosts: options.hosts,
    faults: args.faults,
  });
  let stoppedCleanup = () => {};
  const stopped = new Promise<string>((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => resolve(signal);
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    const onAbort = () => resolve('abort');
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    stoppedCleanup = () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      options.signal?.removeEventListener('abort', onAbort);
    };
  });
  try {
    await writeFile(args.serverConfig, gcpEmulatorServerConfig(emulator), { mode: 0o600 });
    log(
      `GCP emulator listening on ${emulator.url} (project ${emulator.project}, Compute at ${emulator.computeUrl})`,
    );
    log(
      `Regions: ${emulator.regions.join(', ')}; hosts: ${options.hosts ? 'real' : 'none (made-up addresses)'}`,
    );
    for (const fault of emulator.faults()) log(`Fault: ${JSON.stringify(fault)}`);
    log(`Wrote the server config to ${args.serverConfig}; state at ${emulator.url}/_emulator/state`);
    options.onReady?.(emulator);
    const reason = await stopped;
    log(`Stopping (${reason})`);
  } finally {
    stoppedCleanup();
    await emulator.close();
    await options.hosts?.close();
  }
}
