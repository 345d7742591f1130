/**
 * `emulator runpod --server-config FILE [--port N] [--fault CODE[:OPERATION]]...`: starts the
 * RunPod emulator on 127.0.0.1, writes FILE as a complete dstack server `config.yml` (project
 * `main` with a `runpod` backend pointed at the emulator's GraphQL endpoint with its key, and
 * `catalog.url` the emulator's gpuhunt bucket, where RunPod's offers are published), and runs
 * until SIGINT/SIGTERM (or `signal`), terminating its pods on the way out.
 */
import { stringify } from 'yaml';
import {
  type EmulatorCommandArguments,
  type EmulatorCommandOptions,
  parseEmulatorArguments,
  runEmulatorCommand,
} from '../emulator-command.js';
import type { RentalContainers } from '../hosts/docker-rental-containers.js';
import { type RunpodEmulator, type RunpodEmulatorOptions, startRunpodEmulator } from './runpod-emulator.js';
import { parseRunpodFaultFlag, type RunpodFault } from './runpod-emulator-faults.js';

export const RUNPOD_EMULATOR_USAGE =
  'Usage: emulator runpod --server-config FILE [--port N] [--fault CODE[:OPERATION]]... [--no-hosts]';

export interface RunpodEmulatorCommandOptions extends Omit<EmulatorCommandOptions<RunpodEmulator>, 'hosts'> {
  /** Where pods run (closed with the command); without, they get made-up ports. */
  containers?: RentalContainers;
  /** Other emulator settings; the command line wins for port and faults. */
  emulator?: Omit<RunpodEmulatorOptions, 'containers' | 'port' | 'host' | 'faults'>;
}

export type RunpodEmulatorCommandArguments = EmulatorCommandArguments<RunpodFault>;

/** Parses the arguments after `runpod`; the error names the bad flag. */
export function parseRunpodEmulatorArguments(argv: readonly string[]): RunpodEmulatorCommandArguments {
  return parseEmulatorArguments(argv, RUNPOD_EMULATOR_USAGE, parseRunpodFaultFlag);
}

/** A `runpod` backend entry of the server's `config.yml` pointed at `emulator`. */
export function runpodEmulatorBackend(emulator: RunpodEmulator) {
  return {
    type: 'runpod',
    creds: { type: 'api_key', api_key: emulator.apiKey },
    endpoint_url: emulator.graphqlUrl,
  };
}

/**
 * The dstack server `config.yml` that points project `main`'s `runpod` backend at `emulator`,
 * and the server's catalog at the emulator's gpuhunt bucket (RunPod is an offline catalog provider).
 */
export function runpodEmulatorServerConfig(emulator: RunpodEmulator): string {
  return stringify({
    projects: [{ name: 'main', backends: [runpodEmulatorBackend(emulator)] }],
    catalog: { url: emulator.catalogUrl },
  });
}

/** Runs the command until it is stopped; resolves once the emulator and its containers are down. */
export async function runRunpodEmulatorCommand(
  argv: readonly string[],
  options: RunpodEmulatorCommandOptions = {},
): Promise<void> {
  const args = parseRunpodEmulatorArguments(argv);
  try {
    await runEmulatorCommand(
      args,
      {
        start: () =>
          startRunpodEmulator({
            ...options.emulator,
            host: '127.0.0.1',
            port: args.port,
            containers: options.containers,
            faults: args.faults,
          }),
        serverConfig: runpodEmulatorServerConfig,
        listening: (emulator) =>
          `RunPod emulator listening on ${emulator.url} (GraphQL at ${emulator.graphqlUrl}, key ${emulator.apiKey}; gpuhunt catalog at ${emulator.catalogUrl})`,
        machines: options.containers ? 'a Docker container per pod' : 'none (pods get made-up ports)',
      },
      options,
    );
  } finally {
    await options.containers?.close();
  }
}
