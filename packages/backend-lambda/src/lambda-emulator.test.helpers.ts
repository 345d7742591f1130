/** The Lambda emulator of @dstack/testing, and the configs that point this backend at it. */
import {
  type LambdaEmulator,
  type LambdaEmulatorOptions,
  startLambdaEmulator,
} from '@dstack/testing/emulators';
import type { LambdaBackendConfigWithCreds } from './lambda-config.js';

/** Instances boot at once and are forgotten soon after their termination. */
export const FAST_TIMELINE = { bootingMs: 50, terminatingMs: 100 } as const;

export function startLambdaTestEmulator(options: LambdaEmulatorOptions = {}): Promise<LambdaEmulator> {
  return startLambdaEmulator({ timeline: FAST_TIMELINE, ...options });
}

/** A config with the emulator's key, pointed at it. */
export function emulatorConfig(
  emulator: LambdaEmulator,
  extra: Partial<LambdaBackendConfigWithCreds> = {},
): LambdaBackendConfigWithCreds {
  return {
    type: 'lambda',
    regions: [...emulator.regions],
    endpoint_url: emulator.apiUrl,
    creds: { type: 'api_key', api_key: emulator.apiKey },
    ...extra,
  };
}
