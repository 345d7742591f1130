/**
 * What the GCP emulator's tests share: google-auth-library's real JWT client for a service-account
 * key file (its token exchange sent to the key's `token_uri`), fetch calls to Compute REST with the
 * token, a manual clock, and the recording `EmulatedHosts` double of the AWS tests.
 */
import { gaxios, JWT } from 'google-auth-library';
import { manualClock } from '../aws/aws-emulator.test.helpers.js';
import { type GcpEmulator, type GcpEmulatorOptions, startGcpEmulator } from './gcp-emulator.js';
import { GOOGLE_TOKEN_URL, type ServiceAccountJson } from './gcp-oauth.js';

export { type ManualClock, manualClock, RecordingHosts, settle } from '../aws/aws-emulator.test.helpers.js';

export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

/**
 * google-auth-library's JWT client for `key`. The library posts to Google's token URL whatever
 * `token_uri` says, so its transporter sends that request to `token_uri` (what a backend does too).
 */
export function jwtClient(key: ServiceAccountJson): JWT {
  const transporter = new gaxios.Gaxios();
  transporter.interceptors.request.add({
    resolved: async (config) => {
      if (String(config.url) === GOOGLE_TOKEN_URL) config.url = new URL(key.token_uri);
      return config;
    },
  });
  return new JWT({
    email: key.client_email,
    key: key.private_key,
    keyId: key.private_key_id,
    scopes: [CLOUD_PLATFORM_SCOPE],
    transporter,
  });
}

/** An access token for the emulator's own service account, through the real token exchange. */
export async function accessToken(emulator: GcpEmulator): Promise<string> {
  const { token } = await jwtClient(emulator.serviceAccountJson()).getAccessToken();
  if (!token) throw new Error('no access token');
  return token;
}

export interface ComputeAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: answers are read field by field in assertions
  body: any;
}

/** A REST call under `<emulator>/compute/v1/projects/<project>/` (or an absolute path from `/`). */
export async function compute(
  emulator: GcpEmulator,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<ComputeAnswer> {
  const url = path.startsWith('/')
    ? `${emulator.url}${path}`
    : `${emulator.computeUrl}/projects/${emulator.project}/${path}`;
  const response = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** The emulator's timeline in the tests: long enough that nothing moves unless the clock does. */
export const TEST_TIMELINE = {
  operationPendingMs: 1_000,
  provisioningMs: 10_000,
  stagingMs: 5_000,
  stoppingMs: 5_000,
  terminatedVisibleMs: 10_000,
};

export async function startTestEmulator(options: GcpEmulatorOptions = {}) {
  const clock = manualClock();
  const emulator = await startGcpEmulator({ clock: clock.read, timeline: TEST_TIMELINE, ...options });
  const token = await accessToken(emulator);
  return { emulator, clock, token };
}

/** The insert body dstack sends (`gcp/resources.py`), for `name` in `zone`. */
export function instanceBody(name: string, zone: string, overrides: Record<string, unknown> = {}) {
  return {
    name,
    machineType: `zones/${zone}/machineTypes/n1-standard-4`,
    disks: [
      {
        boot: true,
        autoDelete: true,
        initializeParams: {
          sourceImage: 'projects/dstack/global/images/dstack-cuda-0.19.40',
          diskSizeGb: '100',
          diskType: `zones/${zone}/diskTypes/pd-balanced`,
        },
      },
    ],
    guestAccelerators: [
      { acceleratorType: `projects/p/zones/${zone}/acceleratorTypes/nvidia-tesla-t4`, acceleratorCount: 1 },
    ],
    scheduling: { onHostMaintenance: 'TERMINATE' },
    networkInterfaces: [
      {
        network: 'global/networks/default',
        accessConfigs: [{ type: 'ONE_TO_ONE_NAT', name: 'External NAT', networkTier: 'PREMIUM' }],
      },
    ],
    metadata: {
      items: [{ key: 'startup-script', value: '#!/bin/bash\necho hello from the emulated host\n' }],
    },
    labels: { owner: 'dstack' },
    tags: { items: ['dstack-runner-instance'] },
    ...overrides,
  };
}
