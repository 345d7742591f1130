/**
 * The EC2 emulator of @dstack/testing with the conformance suite's hooks, and the configs that
 * point this backend at it.
 */

import type { BackendEmulator } from '@dstack/testing';
import { type AwsEmulator, type AwsEmulatorOptions, startAwsEmulator } from '@dstack/testing/emulators';
import type { AwsBackendConfigWithCreds } from './aws-config.js';

/** Fast instance timeline for tests (the emulator's shape; its NotFound window kept). */
export const FAST_TIMELINE = { pendingMs: 200, shuttingDownMs: 100, notFoundWindowMs: 150 } as const;

export interface AwsTestEmulator extends BackendEmulator {
  readonly aws: AwsEmulator;
}

export async function startAwsTestEmulator(options: AwsEmulatorOptions = {}): Promise<AwsTestEmulator> {
  const aws = await startAwsEmulator({ timeline: FAST_TIMELINE, ...options });
  const mostZones = Math.max(...aws.regions.map((region) => aws.data.zonesOf(region).length));
  let capacityFault: string | undefined;
  return {
    aws,
    close: () => aws.close(),
    // A launch fails once every zone of its region answered InsufficientInstanceCapacity (the
    // SDK does not retry that code). Firings a region with fewer zones leaves over only move
    // the next launch on to a later zone.
    failNextLaunchWithNoCapacity: (count = 1) => {
      if (capacityFault !== undefined) aws.removeFault(capacityFault);
      capacityFault = aws.addFault({ code: 'InsufficientInstanceCapacity', count: count * mostZones }).id;
    },
    removeInstance: (instanceId) => aws.removeInstance(instanceId),
    launchedMachineCount: () => aws.state().instances.length,
  };
}

/** A config with the emulator's key, pointed at it. */
export function emulatorConfig(
  aws: AwsEmulator,
  extra: Partial<AwsBackendConfigWithCreds> = {},
): AwsBackendConfigWithCreds {
  return {
    type: 'aws',
    regions: [...aws.regions],
    endpoint_url: aws.url,
    creds: {
      type: 'access_key',
      access_key: aws.credentials.accessKeyId,
      secret_key: aws.credentials.secretAccessKey,
    },
    ...extra,
  };
}
