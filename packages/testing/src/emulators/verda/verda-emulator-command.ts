/**
 * `emulator verda --server-config FILE [--port N] [--fault CODE[:INSTANCE_TYPE]]...`: starts the
 * Verda emulator on 127.0.0.1, writes FILE as a complete dstack server `config.yml` (project `main`
 * with a `verda` backend: the emulator's client credentials and `endpoint_url` its API root), and
 * runs until SIGINT/SIGTERM (or `signal`), terminating its hosts on the way out.
 */
import { stringify } from 'yaml';
import {
  type EmulatorCommandArguments,
  type EmulatorCommandOptions,
  parseEmulatorArguments,
  runEmulatorCommand,
} from '../emulator-command.js';
import { startVerdaEmulator, type VerdaEmulator, type VerdaEmulatorOptions } from './verda-emulator.js';
import { parseVerdaFaultFlag, type VerdaFault } from './verda-emulator-faults.js';

export const VERDA_EMULATOR_USAGE =
  'Usage: emulator verda --server-config FILE [--port N] [--fault CODE[:INSTANCE_TYPE]]... [--no-hosts]';

export interface VerdaEmulatorCommandOptions extends EmulatorCommandOptions<VerdaEmulator> {
  emulator?: Omit<VerdaEmulatorOptions, 'hosts' | 'port' | 'host' | 'faults'>;
}

export type VerdaEmulatorCommandArguments = EmulatorCommandArguments<VerdaFault>;

export function parseVerdaEmulatorArguments(argv: readonly string[]): VerdaEmulatorCommandArguments {
  return parseEmulatorArguments(argv, VERDA_EMULATOR_USAGE, parseVerdaFaultFlag);
}

/** A `verda` backend entry of the server's `config.yml` pointed at `emulator`. */
export function verdaEmulatorBackend(emulator: VerdaEmulator) {
  return {
    type: 'verda',
    regions: [...emulator.regions],
    creds: {
      type: 'api_key',
      client_id: emulator.client.clientId,
      client_secret: emulator.client.clientSecret,
    },
    endpoint_url: emulator.apiUrl,
  };
}

export function verdaEmulatorServerConfig(emulator: VerdaEmulator): string {
  return stringify({ projects: [{ name: 'main', backends: [verdaEmulatorBackend(emulator)] }] });
}

export function runVerdaEmulatorCommand(
  argv: readonly string[],
  options: VerdaEmulatorCommandOptions = {},
): Promise<void> {
  const args = parseVerdaEmulatorArguments(argv);
  return runEmulatorCommand(
    args,
    {
      start: () =>
        startVerdaEmulator({
          ...options.emulator,
          host: '127.0.0.1',
          port: args.port,
          hosts: options.hosts,
          faults: args.faults,
        }),
      serverConfig: verdaEmulatorServerConfig,
      listening: (emulator) => `Verda emulator listening on ${emulator.url} (its API at ${emulator.apiUrl})`,
    },
    options,
  );
}
