/**
 * `emulator vastai --server-config FILE [--port N] [--fault CODE[:ROUTE]]...`: starts the Vast.ai
 * emulator on 127.0.0.1, writes FILE as a complete dstack server `config.yml` (project `main` with
 * a `vastai` backend pointed at the emulator: its API key, and `endpoint_url` the emulator's root),
 * and runs until SIGINT/SIGTERM (or `signal`), destroying its rentals and their containers on the
 * way out.
 */
import { stringify } from 'yaml';
import {
  type EmulatorCommandArguments,
  type EmulatorCommandOptions,
  parseEmulatorArguments,
  runEmulatorCommand,
} from '../emulator-command.js';
import type { VastaiContainers } from './vastai-docker-containers.js';
import { startVastaiEmulator, type VastaiEmulator, type VastaiEmulatorOptions } from './vastai-emulator.js';
import { parseVastaiFaultFlag, type VastaiFault } from './vastai-emulator-faults.js';

export const VASTAI_EMULATOR_USAGE =
  'Usage: emulator vastai --server-config FILE [--port N] [--fault CODE[:ROUTE]]... [--no-hosts]';

export interface VastaiEmulatorCommandOptions extends Omit<EmulatorCommandOptions<VastaiEmulator>, 'hosts'> {
  /** Where rentals run (closed with the command); without, they get made-up ports. */
  containers?: VastaiContainers;
  /** Other emulator settings (timeline, asks, key…); the command line wins for port and faults. */
  emulator?: Omit<VastaiEmulatorOptions, 'containers' | 'port' | 'host' | 'faults'>;
}

export type VastaiEmulatorCommandArguments = EmulatorCommandArguments<VastaiFault>;

/** Parses the arguments after `vastai`; the error names the bad flag. */
export function parseVastaiEmulatorArguments(argv: readonly string[]): VastaiEmulatorCommandArguments {
  return parseEmulatorArguments(argv, VASTAI_EMULATOR_USAGE, parseVastaiFaultFlag);
}

/**
 * A `vastai` backend entry of the server's `config.yml` pointed at `emulator`: its API key and
 * `endpoint_url`, the emulator's root (the backend appends `/api/v0/…`, as to `https://console.vast.ai`).
 */
export function vastaiEmulatorBackend(emulator: VastaiEmulator) {
  return {
    type: 'vastai',
    creds: { type: 'api_key', api_key: emulator.apiKey },
    endpoint_url: emulator.url,
  };
}

/** The dstack server `config.yml` that points project `main`'s `vastai` backend at `emulator`. */
export function vastaiEmulatorServerConfig(emulator: VastaiEmulator): string {
  return stringify({ projects: [{ name: 'main', backends: [vastaiEmulatorBackend(emulator)] }] });
}

/** Runs the command until it is stopped; resolves once the emulator and its containers are down. */
export async function runVastaiEmulatorCommand(
  argv: readonly string[],
  options: VastaiEmulatorCommandOptions = {},
): Promise<void> {
  const args = parseVastaiEmulatorArguments(argv);
  try {
    await runEmulatorCommand(
      args,
      {
        start: () =>
          startVastaiEmulator({
            ...options.emulator,
            host: '127.0.0.1',
            port: args.port,
            containers: options.containers,
            faults: args.faults,
          }),
        serverConfig: vastaiEmulatorServerConfig,
        listening: (emulator) =>
          `Vast.ai emulator listening on ${emulator.url} (API at ${emulator.url}/api/v0, key ${emulator.apiKey})`,
        machines: options.containers ? 'a Docker container per rental' : 'none (rentals get made-up ports)',
      },
      options,
    );
  } finally {
    await options.containers?.close();
  }
}
