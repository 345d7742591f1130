/**
 * `emulator gcp --server-config FILE [--port N] [--fault CODE[:MACHINE_TYPE]]...`: starts the
 * GCP emulator on 127.0.0.1, writes FILE as a complete dstack server `config.yml` (project `main`
 * with a `gcp` backend pointed at the emulator: the service-account key whose `token_uri` is the
 * emulator's, and `endpoint_url` the Compute base URL), and runs until SIGINT/SIGTERM (or
 * `signal`), terminating its hosts on the way out.
 */
import { stringify } from 'yaml';
import {
  type EmulatorCommandArguments,
  type EmulatorCommandOptions,
  parseEmulatorArguments,
  runEmulatorCommand,
} from '../emulator-command.js';
import { type GcpEmulator, type GcpEmulatorOptions, startGcpEmulator } from './gcp-emulator.js';
import { type GcpFault, parseGcpFaultFlag } from './gcp-emulator-faults.js';

export const GCP_EMULATOR_USAGE =
  'Usage: emulator gcp --server-config FILE [--port N] [--fault CODE[:MACHINE_TYPE]]... [--no-hosts]';

export interface GcpEmulatorCommandOptions extends EmulatorCommandOptions<GcpEmulator> {
  /** Other emulator settings (timeline, regions…); the command line wins for port and faults. */
  emulator?: Omit<GcpEmulatorOptions, 'hosts' | 'port' | 'host' | 'faults'>;
}

export type GcpEmulatorCommandArguments = EmulatorCommandArguments<GcpFault>;

/** Parses the arguments after `gcp`; the error names the bad flag. */
export function parseGcpEmulatorArguments(argv: readonly string[]): GcpEmulatorCommandArguments {
  return parseEmulatorArguments(argv, GCP_EMULATOR_USAGE, parseGcpFaultFlag);
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
export function runGcpEmulatorCommand(
  argv: readonly string[],
  options: GcpEmulatorCommandOptions = {},
): Promise<void> {
  const args = parseGcpEmulatorArguments(argv);
  return runEmulatorCommand(
    args,
    {
      start: () =>
        startGcpEmulator({
          ...options.emulator,
          host: '127.0.0.1',
          port: args.port,
          hosts: options.hosts,
          faults: args.faults,
        }),
      serverConfig: gcpEmulatorServerConfig,
      listening: (emulator) =>
        `GCP emulator listening on ${emulator.url} (project ${emulator.project}, Compute at ${emulator.computeUrl})`,
    },
    options,
  );
}
