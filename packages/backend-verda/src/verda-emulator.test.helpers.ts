/** The Verda emulator of @dstack/testing, and the configs that point this backend at it. */
import { startVerdaEmulator, type VerdaEmulator, type VerdaEmulatorOptions } from '@dstack/testing/emulators';
import type { VerdaBackendConfigWithCreds } from './verda-config.js';

/** Instances leave `ordered` at once (Verda refuses to delete an ordered one) and boot fast. */
export const FAST_TIMELINE = { orderedMs: 0, provisioningMs: 50, deletingMs: 100 } as const;

export function startVerdaTestEmulator(options: VerdaEmulatorOptions = {}): Promise<VerdaEmulator> {
  return startVerdaEmulator({ timeline: FAST_TIMELINE, ...options });
}

/** A config with the emulator's client credentials, pointed at it. */
export function emulatorConfig(
  emulator: VerdaEmulator,
  extra: Partial<VerdaBackendConfigWithCreds> = {},
): VerdaBackendConfigWithCreds {
  return {
    type: 'verda',
    regions: [...emulator.regions],
    endpoint_url: emulator.apiUrl,
    creds: {
      type: 'api_key',
      client_id: emulator.client.clientId,
      client_secret: emulator.client.clientSecret,
    },
    ...extra,
  };
}
