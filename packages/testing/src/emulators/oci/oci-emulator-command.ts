/**
 * `emulator oci --server-config FILE [--port N] [--fault CODE[:SHAPE]]...`: starts the OCI
 * emulator on 127.0.0.1, writes FILE as a complete dstack server `config.yml` (project `main` with
 * an `oci` backend pointed at the emulator: its user's API key as `client` creds, its regions,
 * `endpoint_url`), and runs until SIGINT/SIGTERM (or `signal`), terminating its hosts. The
 * emulator's shapes and prices are the bundled catalog's `oci.csv` (what the collector gathers
 * from it), so the server plans from its own snapshot.
 */
import { stringify } from 'yaml';
import {
  type EmulatorCommandArguments,
  type EmulatorCommandOptions,
  parseEmulatorArguments,
  runEmulatorCommand,
} from '../emulator-command.js';
import { type OciEmulator, type OciEmulatorOptions, startOciEmulator } from './oci-emulator.js';
import { type OciFault, parseOciFaultFlag } from './oci-emulator-faults.js';

export const OCI_EMULATOR_USAGE =
  'Usage: emulator oci --server-config FILE [--port N] [--fault CODE[:SHAPE]]... [--no-hosts]';

export interface OciEmulatorCommandOptions extends EmulatorCommandOptions<OciEmulator> {
  /** Other emulator settings (timeline, shapes…); the command line wins for port and faults. */
  emulator?: Omit<OciEmulatorOptions, 'hosts' | 'port' | 'faults'>;
}

export type OciEmulatorCommandArguments = EmulatorCommandArguments<OciFault>;

/** Parses the arguments after `oci`; the error names the bad flag. */
export function parseOciEmulatorArguments(argv: readonly string[]): OciEmulatorCommandArguments {
  return parseEmulatorArguments(argv, OCI_EMULATOR_USAGE, parseOciFaultFlag);
}

/** An `oci` backend entry of the server's `config.yml` pointed at `emulator`. */
export function ociEmulatorBackend(emulator: OciEmulator) {
  return {
    type: 'oci',
    regions: [...emulator.regions],
    endpoint_url: emulator.url,
    creds: {
      type: 'client',
      user: emulator.user.user,
      tenancy: emulator.user.tenancy,
      key_content: emulator.user.privateKey,
      fingerprint: emulator.user.fingerprint,
      region: emulator.user.region,
    },
  };
}

/** The dstack server `config.yml` that points project `main`'s `oci` backend at `emulator`. */
export function ociEmulatorServerConfig(emulator: OciEmulator): string {
  return stringify({ projects: [{ name: 'main', backends: [ociEmulatorBackend(emulator)] }] });
}

/** Runs the command until it is stopped; resolves once the emulator and its hosts are down. */
export function runOciEmulatorCommand(
  argv: readonly string[],
  options: OciEmulatorCommandOptions = {},
): Promise<void> {
  const args = parseOciEmulatorArguments(argv);
  return runEmulatorCommand(
    args,
    {
      start: () =>
        startOciEmulator({ ...options.emulator, port: args.port, hosts: options.hosts, faults: args.faults }),
      serverConfig: ociEmulatorServerConfig,
      listening: (emulator) =>
        `OCI emulator listening on ${emulator.url} (tenancy ${emulator.user.tenancy}, regions ${emulator.regions.join(', ')})`,
    },
    options,
  );
}
