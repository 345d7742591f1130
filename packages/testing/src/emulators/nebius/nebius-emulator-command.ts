/**
 * `emulator nebius --server-config FILE [--port N] [--fault CODE[:PLATFORM]]...`: starts the Nebius
 * emulator on 127.0.0.1, writes FILE as a complete dstack server `config.yml` (project `main` with
 * a `nebius` backend: the emulator's service account key and `endpoint_url` its address), and runs
 * until SIGINT/SIGTERM (or `signal`), terminating its hosts on the way out.
 */
import { stringify } from 'yaml';
import {
  type EmulatorCommandArguments,
  type EmulatorCommandOptions,
  parseEmulatorArguments,
  runEmulatorCommand,
} from '../emulator-command.js';
import { startNebiusEmulator } from './nebius-emulator.js';
import { type NebiusFault, parseNebiusFaultFlag } from './nebius-emulator-faults.js';
import type { NebiusEmulator, NebiusEmulatorOptions } from './nebius-emulator-types.js';

export const NEBIUS_EMULATOR_USAGE =
  'Usage: emulator nebius --server-config FILE [--port N] [--fault CODE[:PLATFORM]]... [--no-hosts]';

export interface NebiusEmulatorCommandOptions extends EmulatorCommandOptions<NebiusEmulator> {
  emulator?: Omit<NebiusEmulatorOptions, 'hosts' | 'port' | 'host' | 'faults'>;
}

export type NebiusEmulatorCommandArguments = EmulatorCommandArguments<NebiusFault>;

export function parseNebiusEmulatorArguments(argv: readonly string[]): NebiusEmulatorCommandArguments {
  return parseEmulatorArguments(argv, NEBIUS_EMULATOR_USAGE, parseNebiusFaultFlag);
}

/** A `nebius` backend entry of the server's `config.yml` pointed at `emulator`. */
export function nebiusEmulatorBackend(emulator: NebiusEmulator) {
  return {
    type: 'nebius',
    creds: {
      type: 'service_account',
      service_account_id: emulator.serviceAccount.serviceAccountId,
      public_key_id: emulator.serviceAccount.publicKeyId,
      private_key_content: emulator.serviceAccount.privateKey,
    },
    endpoint_url: emulator.apiUrl,
  };
}

export function nebiusEmulatorServerConfig(emulator: NebiusEmulator): string {
  return stringify({ projects: [{ name: 'main', backends: [nebiusEmulatorBackend(emulator)] }] });
}

export function runNebiusEmulatorCommand(
  argv: readonly string[],
  options: NebiusEmulatorCommandOptions = {},
): Promise<void> {
  const args = parseNebiusEmulatorArguments(argv);
  return runEmulatorCommand(
    args,
    {
      start: () =>
        startNebiusEmulator({
          ...options.emulator,
          host: '127.0.0.1',
          port: args.port,
          hosts: options.hosts,
          faults: args.faults,
        }),
      serverConfig: nebiusEmulatorServerConfig,
      listening: (emulator) =>
        `Nebius emulator listening on ${emulator.apiUrl} (gRPC, plaintext; its control server at ${emulator.url})`,
    },
    options,
  );
}
