/**
 * The Vast.ai emulator of @dstack/testing with the configs that point this backend at it.
 */
import {
  startVastaiEmulator,
  type VastaiEmulator,
  type VastaiEmulatorOptions,
} from '@dstack/testing/emulators';
import type { VastAiBackendConfigWithCreds } from './vastai-config.js';

/** A fast rental timeline for tests. */
export const FAST_TIMELINE = { loadingAfterMs: 50, runningAfterMs: 150 } as const;

export function startVastAiTestEmulator(options: VastaiEmulatorOptions = {}): Promise<VastaiEmulator> {
  return startVastaiEmulator({ timeline: FAST_TIMELINE, ...options });
}

/** A config with the emulator's key, pointed at it. */
export function emulatorConfig(
  emulator: VastaiEmulator,
  extra: Partial<VastAiBackendConfigWithCreds> = {},
): VastAiBackendConfigWithCreds {
  return {
    type: 'vastai',
    endpoint_url: emulator.url,
    creds: { type: 'api_key', api_key: emulator.apiKey },
    ...extra,
  };
}
