/**
 * `emulator lambda --server-config FILE [--port N] [--fault CODE[:INSTANCE_TYPE]]...`: starts the
 * Lambda emulator on 127.0.0.1, writes FILE as a complete dstack server `config.yml` (project
 * `main` with a `lambda` backend: the emulator's API key and `endpoint_url` its API root), and runs
 * until SIGINT/SIGTERM (or `signal`), terminating its hosts on the way out.
 */
import { stringify } from 'yaml';
import {
  type EmulatorCommandArguments,
  type EmulatorCommandOptions,
  parseEmulatorArguments,
  runEmulatorCommand,
} from '../emulator-command.js';
import { type LambdaEmulator, type LambdaEmulatorOptions, startLambdaEmulator } from './lambda-emulator.js';
import { type LambdaFault, parseLambdaFaultFlag } from './lambda-emulator-faults.js';

export const LAMBDA_EMULATOR_USAGE =
  'Usage: emulator lambda --server-config FILE [--port N] [--fault CODE[:INSTANCE_TYPE]]... [--no-hosts]';

export interface LambdaEmulatorCommandOptions extends EmulatorCommandOptions<LambdaEmulator> {
  emulator?: Omit<LambdaEmulatorOptions, 'hosts' | 'port' | 'host' | 'faults'>;
}

export type LambdaEmulatorCommandArguments = EmulatorCommandArguments<LambdaFault>;

export function parseLambdaEmulatorArguments(argv: readonly string[]): LambdaEmulatorCommandArguments {
  return parseEmulatorArguments(argv, LAMBDA_EMULATOR_USAGE, parseLambdaFaultFlag);
}

/** A `lambda` backend entry of the server's `config.yml` pointed at `emulator`. */
export function lambdaEmulatorBackend(emulator: LambdaEmulator) {
  return {
    type: 'lambda',
    regions: [...emulator.regions],
    creds: { type: 'api_key', api_key: emulator.apiKey },
    endpoint_url: emulator.apiUrl,
  };
}

export function lambdaEmulatorServerConfig(emulator: LambdaEmulator): string {
  return stringify({ projects: [{ name: 'main', backends: [lambdaEmulatorBackend(emulator)] }] });
}

export function runLambdaEmulatorCommand(
  argv: readonly string[],
  options: LambdaEmulatorCommandOptions = {},
): Promise<void> {
  const args = parseLambdaEmulatorArguments(argv);
  return runEmulatorCommand(
    args,
    {
      start: () =>
        startLambdaEmulator({
          ...options.emulator,
          host: '127.0.0.1',
          port: args.port,
          hosts: options.hosts,
          faults: args.faults,
        }),
      serverConfig: lambdaEmulatorServerConfig,
      listening: (emulator) => `Lambda emulator listening on ${emulator.url} (its API at ${emulator.apiUrl})`,
    },
    options,
  );
}
