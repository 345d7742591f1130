/** Docker for the end-to-end tests whose cloud instances are emulated hosts (Docker containers). */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { EMULATED_HOST_EMULATOR_LABEL } from '@dstack/testing/emulators';

const run = promisify(execFile);

async function dockerAnswers(): Promise<boolean> {
  try {
    await run('docker', ['info'], { timeout: 20_000 });
    return true;
  } catch {
    return false;
  }
}

/** True when Docker does not answer outside CI: the suite skips. CI provides Docker (.ci/run). */
export const dockerMissing = !(await dockerAnswers()) && process.env.CI !== 'true';

/** The containers (running or not) of the hosts an emulator named `emulatorName` made. */
export async function hostsLeft(emulatorName: string): Promise<string[]> {
  const { stdout } = await run('docker', [
    'ps',
    '-a',
    '--filter',
    `label=${EMULATED_HOST_EMULATOR_LABEL}=${emulatorName}`,
    '--format',
    '{{.Names}}',
  ]);
  return stdout.split('\n').filter(Boolean);
}
