/** The Nebius emulator of @dstack/testing, and the configs that point this backend at it. */
import {
  type NebiusEmulator,
  type NebiusEmulatorOptions,
  startNebiusEmulator,
} from '@dstack/testing/emulators';
import type { NebiusBackendConfigWithCreds } from './nebius-config.js';

/** Disks and instances come up fast. */
export const FAST_TIMELINE = {
  diskMs: 20,
  creatingMs: 20,
  startingMs: 50,
  deletingMs: 50,
  stoppingMs: 50,
} as const;

export function startNebiusTestEmulator(options: NebiusEmulatorOptions = {}): Promise<NebiusEmulator> {
  return startNebiusEmulator({ timeline: FAST_TIMELINE, ...options });
}

/** A config with the emulator's service account key, pointed at it. */
export function emulatorConfig(
  emulator: NebiusEmulator,
  extra: Partial<NebiusBackendConfigWithCreds> = {},
): NebiusBackendConfigWithCreds {
  return {
    type: 'nebius',
    endpoint_url: emulator.apiUrl,
    creds: {
      type: 'service_account',
      service_account_id: emulator.serviceAccount.serviceAccountId,
      public_key_id: emulator.serviceAccount.publicKeyId,
      private_key_content: emulator.serviceAccount.privateKey,
    },
    ...extra,
  };
}
