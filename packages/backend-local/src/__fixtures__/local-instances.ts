import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type InstanceConfiguration,
  type JobProvisioningData,
  type Requirements,
  RequirementsSchema,
} from '@dstack/core';
import { SHIM_BIN_PATH } from '@dstack/shim';
import type { HostResources } from '../host-resources.js';
import type { LocalCompute } from '../local-compute.js';

/** Why the process tests cannot run, or null when the shim is built. */
export function shimUnavailableReason(): string | null {
  return existsSync(SHIM_BIN_PATH)
    ? null
    : `${SHIM_BIN_PATH} is missing: build it with pnpm turbo run build --filter=@dstack/shim`;
}

/** Requirements any host meets: 1 CPU, 0.1 GB of memory, 1 GB of disk, no GPU. */
export function modestRequirements(gpu?: Record<string, unknown>): Requirements {
  return RequirementsSchema.parse({
    resources: { cpu: { count: { min: 1 } }, memory: { min: 0.1 }, disk: { size: { min: 1 } }, gpu },
  });
}

/** A host of the given size, injected into a Compute so that capacity tests do not depend on the machine. */
export function smallHost(resources: Partial<HostResources> = {}): HostResources {
  return { cpuCount: 2, cpuArch: 'x86', memoryGib: 8, diskGib: 100, gpus: [], ...resources };
}

/** The agent token of the test instances: their shims answer only requests that carry it. */
export const TEST_AGENT_TOKEN = 'local-test-agent-token';

/** A fleet instance's configuration; a fresh dstack instance id (the launch's key) unless one is given. */
export function testInstanceConfiguration(
  instanceName: string,
  instanceId: string = randomUUID(),
): InstanceConfiguration {
  return {
    project_name: 'main',
    instance_name: instanceName,
    instance_id: instanceId,
    agent_token: TEST_AGENT_TOKEN,
    user: 'admin',
    ssh_keys: [],
  };
}

/** Calls `updateProvisioningData` as the server does, until the shim has announced its port. */
export async function waitUntilProvisioned(
  compute: LocalCompute,
  provisioningData: JobProvisioningData,
  timeoutMs = 30_000,
): Promise<JobProvisioningData> {
  const deadline = Date.now() + timeoutMs;
  let current = provisioningData;
  while (current.hostname == null) {
    if (Date.now() > deadline) throw new Error(`the shim did not come up within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    current = await compute.updateProvisioningData(current);
  }
  return current;
}

export function backendDataOf(provisioningData: JobProvisioningData): {
  home: string;
  pid: number;
  agent_ports?: { shim: number };
} {
  return JSON.parse(provisioningData.backend_data ?? '{}');
}

/** Polls `check` until it returns a value other than undefined. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** tsx (a devDependency of this package), to run a TypeScript fixture in a separate process. */
export function findTsx(): string {
  for (let directory = dirname(fileURLToPath(import.meta.url)); ; directory = dirname(directory)) {
    const candidate = join(directory, 'node_modules', '.bin', 'tsx');
    if (existsSync(candidate)) return candidate;
    if (dirname(directory) === directory) break;
  }
  return resolve('node_modules/.bin/tsx');
}
