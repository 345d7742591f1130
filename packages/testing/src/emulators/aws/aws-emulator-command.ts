/**
 * `emulator aws --server-config FILE [--port N] [--fault CODE[:INSTANCE_TYPE]]...`: starts the
 * AWS emulator on 127.0.0.1, writes FILE as a complete dstack server `config.yml` (project `main`
 * with an `aws` backend pointed at the emulator), and runs until SIGINT/SIGTERM (or `signal`),
 * terminating its hosts on the way out.
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import type { EmulatedHosts } from '../emulated-hosts.js';
import { type AwsEmulator, type AwsEmulatorOptions, startAwsEmulator } from './aws-emulator.js';
import { type AwsFault, parseAwsFaultFlag } from './aws-emulator-faults.js';

export const AWS_EMULATOR_USAGE =
  'Usage: emulator aws --server-config FILE [--port N] [--fault CODE[:INSTANCE_TYPE]]... [--no-hosts]';

export interface AwsEmulatorCommandOptions {
  /** The machines instances boot; without, instances get made-up addresses. */
  hosts?: EmulatedHosts;
  /** Stops the command like SIGINT does (tests). */
  signal?: AbortSignal;
  /** Where the command's lines go. Default stdout. */
  log?: (line: string) => void;
  /** Called once the emulator listens and FILE is written. */
  onReady?: (emulator: AwsEmulator) => void;
  /** Other emulator settings (timeline, regions…); the command line wins for port and faults. */
  emulator?: Omit<AwsEmulatorOptions, 'hosts' | 'port' | 'host' | 'faults'>;
}

export interface AwsEmulatorCommandArguments {
  readonly serverConfig: string;
  readonly port: number;
  readonly faults: readonly AwsFault[];
}

/** Parses the arguments after `aws`; the error names the bad flag. */
export function parseAwsEmulatorArguments(argv: readonly string[]): AwsEmulatorCommandArguments {
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
    throw new Error(`${(error as Error).message}\n${AWS_EMULATOR_USAGE}`);
  }
  const serverConfig = values['server-config'];
  if (!serverConfig) throw new Error(`--server-config FILE is required\n${AWS_EMULATOR_USAGE}`);
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--port: expected a port number 0-65535, got ${JSON.stringify(values.port)}`);
  }
  return { serverConfig, port, faults: (values.fault ?? []).map(parseAwsFaultFlag) };
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
export async function runAwsEmulatorCommand(
  argv: readonly string[],
  options: AwsEmulatorCommandOptions = {},
): Promise<void> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const args = parseAwsEmulatorArguments(argv);
  const emulator = await startAwsEmulator({
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
    await writeFile(args.serverConfig, awsEmulatorServerConfig(emulator), { mode: 0o600 });
    log(`AWS emulator listening on ${emulator.url}`);
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
