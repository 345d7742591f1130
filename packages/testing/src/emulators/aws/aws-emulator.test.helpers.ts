/**
 * What the AWS emulator's tests share: real SDK v3 clients pointed at an emulator, a manual clock
 * so every step of an instance's timeline is reached deterministically, and a recording
 * `EmulatedHosts` double.
 */
import { EC2Client } from '@aws-sdk/client-ec2';
import { PricingClient } from '@aws-sdk/client-pricing';
import { ServiceQuotasClient } from '@aws-sdk/client-service-quotas';
import { STSClient } from '@aws-sdk/client-sts';
import type { EmulatedHost, EmulatedHosts, HostLaunchRequest } from '../emulated-hosts.js';
import { type AwsEmulator, type AwsEmulatorOptions, startAwsEmulator } from './aws-emulator.js';

export interface ManualClock {
  now: number;
  advance(ms: number): void;
  read: () => number;
}

export function manualClock(start = Date.UTC(2026, 0, 1)): ManualClock {
  const clock: ManualClock = {
    now: start,
    advance(ms) {
      clock.now += ms;
    },
    read: () => clock.now,
  };
  return clock;
}

export interface SdkKey {
  accessKeyId: string;
  secretAccessKey: string;
}

/** Real SDK clients signed with `key` (the emulator's own by default). */
export function sdkClients(emulator: AwsEmulator, region = 'us-east-1', key: SdkKey = emulator.credentials) {
  const config = {
    endpoint: emulator.url,
    region,
    credentials: { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey },
  };
  return {
    ec2: new EC2Client(config),
    sts: new STSClient(config),
    quotas: new ServiceQuotasClient(config),
    pricing: new PricingClient(config),
  };
}

/** The emulator's timeline in the tests: long enough that nothing moves unless the clock does. */
export const TEST_TIMELINE = {
  notFoundWindowMs: 1_000,
  pendingMs: 10_000,
  shuttingDownMs: 5_000,
  terminatedVisibleMs: 60_000,
};

export async function startTestEmulator(
  options: AwsEmulatorOptions = {},
): Promise<{ emulator: AwsEmulator; clock: ManualClock }> {
  const clock = manualClock();
  const emulator = await startAwsEmulator({ clock: clock.read, timeline: TEST_TIMELINE, ...options });
  return { emulator, clock };
}

/** A test double of `EmulatedHosts` that records every call; launches finish at once or when told. */
export class RecordingHosts implements EmulatedHosts {
  readonly launches: HostLaunchRequest[] = [];
  readonly terminated: string[] = [];
  closed = false;
  readonly #waiting = new Map<
    string,
    { resolve: (host: EmulatedHost) => void; reject: (error: Error) => void }
  >();
  #sequence = 0;

  constructor(private readonly mode: 'immediate' | 'manual' = 'immediate') {}

  launch(request: HostLaunchRequest): Promise<EmulatedHost> {
    this.launches.push(request);
    this.#sequence += 1;
    const host = { instanceId: request.instanceId, address: `127.0.10.${this.#sequence}` };
    if (this.mode === 'immediate') return Promise.resolve(host);
    return new Promise((resolve, reject) => {
      this.#waiting.set(request.instanceId, { resolve: () => resolve(host), reject });
    });
  }

  /** Manual mode: the host of `instanceId` is up (or failed with `error`). */
  async finishLaunch(instanceId: string, error?: Error): Promise<void> {
    const waiting = this.#waiting.get(instanceId);
    if (!waiting) throw new Error(`no launch of ${instanceId} is waiting`);
    this.#waiting.delete(instanceId);
    if (error) waiting.reject(error);
    else waiting.resolve({ instanceId, address: '' });
    // Lets the emulator's `then` run before the test looks again.
    await new Promise((resolve) => setImmediate(resolve));
  }

  async terminate(instanceId: string): Promise<void> {
    this.terminated.push(instanceId);
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

/** Waits for the microtasks and I/O callbacks queued so far (a host launch settling). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
