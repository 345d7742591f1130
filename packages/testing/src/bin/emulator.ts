#!/usr/bin/env node
/**
 * `emulator <provider> …` (`pnpm emulator` at the workspace root): starts a cloud emulator a user
 * can point a dstack server at, e.g. `emulator aws --server-config config.yml` (or `gcp`). Run as a command,
 * each emulated instance boots a real host, a Docker container (`DockerEmulatedHosts`);
 * `--no-hosts` gives instances made-up addresses instead. `runEmulator` takes the factory.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AWS_EMULATOR_USAGE, runAwsEmulatorCommand } from '../emulators/aws/aws-emulator-command.js';
import type { EmulatedHosts } from '../emulators/emulated-hosts.js';
import { GCP_EMULATOR_USAGE, runGcpEmulatorCommand } from '../emulators/gcp/gcp-emulator-command.js';
import { DockerEmulatedHosts } from '../emulators/hosts/docker-emulated-hosts.js';
import { serveShimTarball } from '../emulators/hosts/shim-tarball-server.js';

export interface RunEmulatorOptions {
  /** Makes the hosts emulated instances boot (e.g. Docker containers); none when absent. */
  createHosts?: () => EmulatedHosts | Promise<EmulatedHosts>;
}

const USAGE = `Usage: emulator <provider> [options]\nProviders:\n  ${AWS_EMULATOR_USAGE.replace('Usage: ', '')}\n  ${GCP_EMULATOR_USAGE.replace('Usage: ', '')}`;

/** Runs `emulator <provider> …` with `argv` (the arguments after the program name). */
export async function runEmulator(argv: readonly string[], options: RunEmulatorOptions = {}): Promise<void> {
  const [provider, ...rest] = argv;
  switch (provider) {
    case 'aws': {
      const hosts = await options.createHosts?.();
      await runAwsEmulatorCommand(rest, { hosts });
      return;
    }
    case 'gcp': {
      const hosts = await options.createHosts?.();
      await runGcpEmulatorCommand(rest, { hosts });
      return;
    }
    case undefined:
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      return;
    default:
      throw new Error(`Unknown provider ${JSON.stringify(provider)}\n${USAGE}`);
  }
}

function isEntryPoint(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

/**
 * The command: with Docker hosts (unless `--no-hosts`), which download the shim from the server's
 * `DSTACK_SHIM_DOWNLOAD_URL`; the workspace's shim is served where they can reach it, and the
 * command prints the setting to start the server with.
 */
async function main(argv: readonly string[]): Promise<void> {
  const [provider] = argv;
  const args = argv.filter((arg) => arg !== '--no-hosts');
  if ((provider !== 'aws' && provider !== 'gcp') || argv.includes('--no-hosts')) {
    await runEmulator(args);
    return;
  }
  const hosts = new DockerEmulatedHosts({ emulator: provider });
  const tarball = await serveShimTarball(hosts);
  process.stdout.write(
    `The hosts download the shim from ${tarball.url}: start the server with
  DSTACK_SHIM_DOWNLOAD_URL=${tarball.url}
`,
  );
  try {
    await runEmulator(args, { createHosts: () => hosts });
  } finally {
    await tarball.close();
  }
}

if (isEntryPoint()) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
