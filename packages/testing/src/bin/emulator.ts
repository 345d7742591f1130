#!/usr/bin/env node
/**
 * `emulator <provider> …` (`pnpm emulator` at the workspace root): starts a cloud emulator a user
 * can point a dstack server at, e.g. `emulator aws --server-config config.yml` (or `azure`, `oci`, `gcp`, `lambda`, `verda`, `nebius`, `runpod`, `vastai`). Run as a command,
 * each emulated instance boots a real host, a Docker container (`DockerEmulatedHosts`);
 * `--no-hosts` gives instances made-up addresses instead. `runEmulator` takes the factory.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AWS_EMULATOR_USAGE, runAwsEmulatorCommand } from '../emulators/aws/aws-emulator-command.js';
import { AZURE_EMULATOR_USAGE, runAzureEmulatorCommand } from '../emulators/azure/azure-emulator-command.js';
import type { EmulatedHosts } from '../emulators/emulated-hosts.js';
import { GCP_EMULATOR_USAGE, runGcpEmulatorCommand } from '../emulators/gcp/gcp-emulator-command.js';
import { serveAgentRuntime } from '../emulators/hosts/agent-runtime-server.js';
import { type DefaultImageRegistry, serveDefaultImages } from '../emulators/hosts/default-image-registry.js';
import { DockerEmulatedHosts } from '../emulators/hosts/docker-emulated-hosts.js';
import type { RentalContainers } from '../emulators/hosts/docker-rental-containers.js';
import { serveRunnerRuntime } from '../emulators/hosts/runner-runtime-server.js';
import {
  LAMBDA_EMULATOR_USAGE,
  runLambdaEmulatorCommand,
} from '../emulators/lambda/lambda-emulator-command.js';
import {
  NEBIUS_EMULATOR_USAGE,
  runNebiusEmulatorCommand,
} from '../emulators/nebius/nebius-emulator-command.js';
import { OCI_EMULATOR_USAGE, runOciEmulatorCommand } from '../emulators/oci/oci-emulator-command.js';
import { DockerRunpodPods } from '../emulators/runpod/runpod-docker-pods.js';
import {
  RUNPOD_EMULATOR_USAGE,
  runRunpodEmulatorCommand,
} from '../emulators/runpod/runpod-emulator-command.js';
import { DockerVastaiContainers } from '../emulators/vastai/vastai-docker-containers.js';
import {
  runVastaiEmulatorCommand,
  VASTAI_EMULATOR_USAGE,
} from '../emulators/vastai/vastai-emulator-command.js';
import { runVerdaEmulatorCommand, VERDA_EMULATOR_USAGE } from '../emulators/verda/verda-emulator-command.js';

/** The providers whose instances boot emulated VM hosts. */
const VM_PROVIDERS = ['aws', 'gcp', 'azure', 'oci', 'lambda', 'verda', 'nebius'];

export interface RunEmulatorOptions {
  /** Makes the hosts emulated instances boot (e.g. Docker containers); none when absent. */
  createHosts?: () => EmulatedHosts | Promise<EmulatedHosts>;
  /** Container providers (Vast.ai, RunPod): where rentals run (Docker containers); made-up ports when absent. */
  createContainers?: () => RentalContainers | Promise<RentalContainers>;
}

const USAGE = `Usage: emulator <provider> [options]\nProviders:\n  ${[AWS_EMULATOR_USAGE, AZURE_EMULATOR_USAGE, OCI_EMULATOR_USAGE, GCP_EMULATOR_USAGE, LAMBDA_EMULATOR_USAGE, VERDA_EMULATOR_USAGE, NEBIUS_EMULATOR_USAGE, RUNPOD_EMULATOR_USAGE, VASTAI_EMULATOR_USAGE].map((usage) => usage.replace('Usage: ', '')).join('\n  ')}`;

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
    case 'azure': {
      const hosts = await options.createHosts?.();
      await runAzureEmulatorCommand(rest, { hosts });
      return;
    }
    case 'oci': {
      const hosts = await options.createHosts?.();
      await runOciEmulatorCommand(rest, { hosts });
      return;
    }
    case 'lambda': {
      const hosts = await options.createHosts?.();
      await runLambdaEmulatorCommand(rest, { hosts });
      return;
    }
    case 'verda': {
      const hosts = await options.createHosts?.();
      await runVerdaEmulatorCommand(rest, { hosts });
      return;
    }
    case 'nebius': {
      const hosts = await options.createHosts?.();
      await runNebiusEmulatorCommand(rest, { hosts });
      return;
    }
    case 'vastai': {
      const containers = await options.createContainers?.();
      await runVastaiEmulatorCommand(rest, { containers });
      return;
    }
    case 'runpod': {
      const containers = await options.createContainers?.();
      await runRunpodEmulatorCommand(rest, { containers });
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
 * The command: with Docker hosts (unless `--no-hosts`), which download the agent runtime from the
 * server's `DSTACK_SHIM_DOWNLOAD_URL` and pull dstack's default image by its name from a registry that
 * stands in for Docker Hub (hosts of dstack's VM images have it pre-pulled); the workspace's
 * runtime package and the default image's stand-in (base-image-stand-in.ts) are served where they
 * can reach them, and the command prints the settings to start the server with.
 */
async function main(argv: readonly string[]): Promise<void> {
  const [provider] = argv;
  const args = argv.filter((arg) => arg !== '--no-hosts');
  if ((provider === 'vastai' || provider === 'runpod') && !argv.includes('--no-hosts')) {
    await runWithContainers(
      args,
      provider === 'vastai' ? new DockerVastaiContainers() : new DockerRunpodPods(),
    );
    return;
  }
  if (!VM_PROVIDERS.includes(provider ?? '') || argv.includes('--no-hosts')) {
    await runEmulator(args);
    return;
  }
  const hosts = new DockerEmulatedHosts({ emulator: provider });
  const tarball = await serveAgentRuntime(hosts);
  let defaultImages: DefaultImageRegistry | undefined;
  try {
    defaultImages = await serveDefaultImages(hosts);
    process.stdout.write(
      `The hosts download the agent runtime from ${tarball.url} and pull dstack's default image from
${defaultImages.registry.hostsAddress}, their Docker Hub: start the server with
  DSTACK_SHIM_DOWNLOAD_URL=${tarball.url}
`,
    );
    await runEmulator(args, { createHosts: () => hosts });
  } finally {
    await tarball.close();
    await defaultImages?.stop();
  }
}

/**
 * `emulator vastai` or `emulator runpod` with Docker containers for the rentals; they reach this
 * machine at their network's gateway, where the workspace's runner runtime is served; the command
 * prints the server's `DSTACK_RUNNER_DOWNLOAD_URL`.
 */
async function runWithContainers(
  args: readonly string[],
  containers: DockerVastaiContainers | DockerRunpodPods,
): Promise<void> {
  const gateway = await containers.gateway();
  // The rentals' entrypoint downloads the runner's portable runtime: serve the workspace's there.
  const runtime = await serveRunnerRuntime({ host: gateway });
  process.stdout.write(
    `Rental containers run on Docker network ${containers.network}; they reach this machine at ${gateway}
They download the runner from ${runtime.url}: start the server with
  DSTACK_RUNNER_DOWNLOAD_URL=${runtime.url}
`,
  );
  try {
    await runEmulator(args, { createContainers: () => containers });
  } finally {
    await runtime.close();
  }
}

if (isEntryPoint()) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
