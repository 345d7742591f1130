#!/usr/bin/env node
/**
 * `emulator <provider> …`: starts a cloud emulator a user can point a dstack server at, e.g.
 * `emulator aws --server-config config.yml`. Which machines the emulated instances boot is the
 * caller's choice: `runEmulator` takes a `createHosts` factory; run directly, this file boots
 * none (instances get made-up addresses).
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AWS_EMULATOR_USAGE, runAwsEmulatorCommand } from '../emulators/aws/aws-emulator-command.js';
import type { EmulatedHosts } from '../emulators/emulated-hosts.js';

export interface RunEmulatorOptions {
  /** Makes the hosts emulated instances boot (e.g. Docker containers); none when absent. */
  createHosts?: () => EmulatedHosts | Promise<EmulatedHosts>;
}

const USAGE = `Usage: emulator <provider> [options]\nProviders:\n  ${AWS_EMULATOR_USAGE.replace('Usage: ', '')}`;

/** Runs `emulator <provider> …` with `argv` (the arguments after the program name). */
export async function runEmulator(argv: readonly string[], options: RunEmulatorOptions = {}): Promise<void> {
  const [provider, ...rest] = argv;
  switch (provider) {
    case 'aws': {
      const hosts = await options.createHosts?.();
      await runAwsEmulatorCommand(rest, { hosts });
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

if (isEntryPoint()) {
  runEmulator(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
