/**
 * What every `emulator <provider> --server-config FILE [--port N] [--fault …]...` command does:
 * parse those flags, start the emulator on 127.0.0.1, write FILE as a complete dstack server
 * `config.yml` pointed at it, and run until SIGINT/SIGTERM (or `signal`), closing the emulator
 * and its hosts on the way out. Each provider's command gives its usage, fault parser, start
 * function and config.
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { EmulatedHosts } from './emulated-hosts.js';

export interface EmulatorCommandArguments<Fault> {
  readonly serverConfig: string;
  readonly port: number;
  readonly faults: readonly Fault[];
}

/** Parses the arguments after the provider's name; the error names the bad flag and shows `usage`. */
export function parseEmulatorArguments<Fault>(
  argv: readonly string[],
  usage: string,
  parseFault: (flag: string) => Fault,
): EmulatorCommandArguments<Fault> {
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
    throw new Error(`${(error as Error).message}\n${usage}`);
  }
  const serverConfig = values['server-config'];
  if (!serverConfig) throw new Error(`--server-config FILE is required\n${usage}`);
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--port: expected a port number 0-65535, got ${JSON.stringify(values.port)}`);
  }
  return { serverConfig, port, faults: (values.fault ?? []).map(parseFault) };
}

/** The options every provider's command takes. */
export interface EmulatorCommandOptions<Emulator> {
  /** The machines instances boot; without, instances get made-up addresses. */
  hosts?: EmulatedHosts;
  /** Stops the command like SIGINT does (tests). */
  signal?: AbortSignal;
  /** Where the command's lines go. Default stdout. */
  log?: (line: string) => void;
  /** Called once the emulator listens and FILE is written. */
  onReady?: (emulator: Emulator) => void;
}

/** What a running emulator must offer the command. */
export interface CommandEmulator {
  readonly url: string;
  readonly regions: readonly string[];
  faults(): readonly unknown[];
  close(): Promise<void>;
}

/** One provider's part of the command. */
export interface EmulatorCommandSpec<Emulator extends CommandEmulator> {
  /** Starts the emulator on 127.0.0.1 with the parsed port and faults. */
  start(): Promise<Emulator>;
  /** The `config.yml` text pointed at the running emulator. */
  serverConfig(emulator: Emulator): string;
  /** The first line printed, e.g. `AWS emulator listening on URL`. */
  listening(emulator: Emulator): string;
  /** What the emulated machines are, for the banner. Default: the hosts given, or made-up addresses. */
  machines?: string;
}

/** Runs the command until it is stopped; resolves once the emulator and its hosts are down. */
export async function runEmulatorCommand<Emulator extends CommandEmulator>(
  args: EmulatorCommandArguments<unknown>,
  spec: EmulatorCommandSpec<Emulator>,
  options: EmulatorCommandOptions<Emulator>,
): Promise<void> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const emulator = await spec.start();
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
    await writeFile(args.serverConfig, spec.serverConfig(emulator), { mode: 0o600 });
    log(spec.listening(emulator));
    log(
      `Regions: ${emulator.regions.join(', ')}; hosts: ${spec.machines ?? (options.hosts ? 'real' : 'none (made-up addresses)')}`,
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
