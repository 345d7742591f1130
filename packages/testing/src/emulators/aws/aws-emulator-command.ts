/**
 * `emulator aws --server-config FILE [--port N] [--fault CODE[:INSTANCE_TYPE]]...`: starts the
 * AWS emulator on 127.0.0.1, writes FILE as a complete dstack server `config.yml` (project `main`
 * with an `aws` backend pointed at the emulator), and runs until SIGINT/SIGTERM (or `signal`),
 * terminating its hosts on the way out.
 */
import { stringify } from 'yaml';
import {
  type EmulatorCommandArguments,
  type EmulatorCommandOptions,
  parseEmulatorArguments,
  runEmulatorCommand,
} from '../emulator-command.js';
import { type AwsEmulator, type AwsEmulatorOptions, startAwsEmulator } from './aws-emulator.js';
import { type AwsFault, parseAwsFaultFlag } from './aws-emulator-faults.js';

export const AWS_EMULATOR_USAGE =
  'Usage: emulator aws --server-config FILE [--port N] [--fault CODE[:INSTANCE_TYPE]]... [--no-hosts]';

export interface AwsEmulatorCommandOptions extends EmulatorCommandOptions<AwsEmulator> {
  /** Other emulator settings (timeline, regions…); the command line wins for port and faults. */
  emulator?: Omit<AwsEmulatorOptions, 'hosts' | 'port' | 'host' | 'faults'>;
}

export type AwsEmulatorCommandArguments = EmulatorCommandArguments<AwsFault>;

/** Parses the arguments after `aws`; the error names the bad flag. */
export function parseAwsEmulatorArguments(argv: readonly string[]): AwsEmulatorCommandArguments {
  return parseEmulatorArguments(argv, AWS_EMULATOR_USAGE, parseAwsFaultFlag);
}

/** An `aws` backend entry of the server's `config.yml` pointed at `emulator`, with its key and regions. */
export function awsEmulatorBackend(emulator: AwsEmulator) {
  return {
    type: 'aws',
    creds: {
      type: 'access_key',
      access_key: emulator.credentials.accessKeyId,
      secret_key: emulator.credentials.secretAccessKey,
    },
    regions: [...emulator.regions],
    endpoint_url: emulator.url,
  };
}

/** The dstack server `config.yml` that points project `main`'s `aws` backend at `emulator`. */
export function awsEmulatorServerConfig(emulator: AwsEmulator): string {
  return stringify({ projects: [{ name: 'main', backends: [awsEmulatorBackend(emulator)] }] });
}

/** Runs the command until it is stopped; resolves once the emulator and its hosts are down. */
export function runAwsEmulatorCommand(
  argv: readonly string[],
  options: AwsEmulatorCommandOptions = {},
): Promise<void> {
  const args = parseAwsEmulatorArguments(argv);
  return runEmulatorCommand(
    args,
    {
      start: () =>
        startAwsEmulator({
          ...options.emulator,
          host: '127.0.0.1',
          port: args.port,
          hosts: options.hosts,
          faults: args.faults,
        }),
      serverConfig: awsEmulatorServerConfig,
      listening: (emulator) => `AWS emulator listening on ${emulator.url}`,
    },
    options,
  );
}
