/**
 * The GCP emulator of @dstack/testing with the conformance suite's hooks, and the configs that
 * point this backend at it.
 */
import type { BackendEmulator } from '@dstack/testing';
import { type GcpEmulator, type GcpEmulatorOptions, startGcpEmulator } from '@dstack/testing/emulators';
import type { GcpBackendConfigWithCreds } from './gcp-config.js';

/** A fast timeline for tests: operations and instances move in tens of milliseconds. */
export const FAST_TIMELINE = {
  operationPendingMs: 20,
  provisioningMs: 100,
  stagingMs: 100,
  stoppingMs: 100,
  terminatedVisibleMs: 150,
} as const;

/** The backend's waits scaled to the fast timeline. */
export const FAST_OPERATIONS = { operationWaitMs: 5_000, operationPollIntervalMs: 20 } as const;

export interface GcpTestEmulator extends BackendEmulator {
  readonly gcp: GcpEmulator;
}

export async function startGcpTestEmulator(options: GcpEmulatorOptions = {}): Promise<GcpTestEmulator> {
  const gcp = await startGcpEmulator({ timeline: FAST_TIMELINE, ...options });
  let capacityFaults: string[] = [];
  return {
    gcp,
    close: () => gcp.close(),
    // A launch fails once every zone it tries answered ZONE_RESOURCE_POOL_EXHAUSTED: one fault
    // per zone, so the zones a launch does not try keep theirs for no other launch of the suite.
    failNextLaunchWithNoCapacity: (count = 1) => {
      for (const id of capacityFaults) gcp.removeFault(id);
      capacityFaults = gcp.data.zones.map(
        (zone) => gcp.addFault({ code: 'ZONE_RESOURCE_POOL_EXHAUSTED', zone: zone.name, count }).id,
      );
    },
    removeInstance: (name) => gcp.removeInstance(name),
    launchedMachineCount: () => gcp.launchedMachineCount(),
  };
}

/** A config with the emulator's service-account key, pointed at it. */
export function emulatorConfig(
  gcp: GcpEmulator,
  extra: Partial<GcpBackendConfigWithCreds> = {},
): GcpBackendConfigWithCreds {
  return {
    type: 'gcp',
    project_id: gcp.project,
    regions: [...gcp.regions],
    endpoint_url: gcp.computeUrl,
    creds: { type: 'service_account', data: JSON.stringify(gcp.serviceAccountJson()) },
    ...extra,
  };
}
