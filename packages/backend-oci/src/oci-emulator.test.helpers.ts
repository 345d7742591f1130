/** The OCI emulator of @dstack/testing with the conformance suite's hooks, and configs pointed at it. */
import type { BackendEmulator } from '@dstack/testing';
import { type OciEmulator, type OciEmulatorOptions, startOciEmulator } from '@dstack/testing/emulators';
import type { OciBackendConfigWithCreds } from './oci-config.js';

export interface OciTestEmulator extends BackendEmulator {
  readonly oci: OciEmulator;
}

/** A fast timeline: instances run in tens of milliseconds. */
export const FAST_TIMELINE = { provisioningMs: 50, terminatingMs: 20 } as const;

export async function startOciTestEmulator(options: OciEmulatorOptions = {}): Promise<OciTestEmulator> {
  const oci = await startOciEmulator({ timeline: FAST_TIMELINE, ...options });
  return {
    oci,
    close: () => oci.close(),
    failNextLaunchWithNoCapacity: (count) => oci.failNextLaunchWithNoCapacity?.(count),
    removeInstance: (id) => oci.removeInstance?.(id),
    launchedMachineCount: () => oci.launchedMachineCount?.() ?? 0,
  };
}

/** A config with the emulator's user and API key, pointed at it. */
export function emulatorConfig(
  oci: OciEmulator,
  extra: Partial<OciBackendConfigWithCreds> = {},
): OciBackendConfigWithCreds {
  return {
    type: 'oci',
    regions: [...oci.regions],
    endpoint_url: oci.url,
    creds: {
      type: 'client',
      user: oci.user.user,
      tenancy: oci.user.tenancy,
      key_content: oci.user.privateKey,
      fingerprint: oci.user.fingerprint,
      region: oci.user.region,
    },
    ...extra,
  };
}
