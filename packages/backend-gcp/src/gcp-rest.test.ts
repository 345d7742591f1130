import { type GcpEmulator, startGcpEmulator } from '@dstack/testing/emulators';
import { MockAgent } from 'undici';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { accessTokenSource, createServiceAccountClient, parseServiceAccountKey } from './gcp-auth.js';
import { listMachineTypes } from './gcp-collector-machine-types.js';
import {
  callGoogleApi,
  GcpApiCallError,
  type GcpRestSettings,
  GcpTokenError,
  getJson,
  joinUrl,
  listAllPages,
} from './gcp-rest.js';

let gcp: GcpEmulator;
let settings: GcpRestSettings;
/** Google's side for the tests that script its answers; nothing reaches the network. */
let agent: MockAgent;

beforeEach(() => {
  agent = new MockAgent();
  agent.disableNetConnect();
});

afterEach(async () => {
  await agent.close();
});

beforeAll(async () => {
  gcp = await startGcpEmulator({ regions: ['us-central1'] });
  const key = parseServiceAccountKey(JSON.stringify(gcp.serviceAccountJson()), 'key.json');
  settings = { token: accessTokenSource(createServiceAccountClient(key)) };
});

afterAll(async () => {
  await gcp?.close();
});

describe('paged lists', () => {
  it('follows nextPageToken through every page of the Billing Catalog and of Compute', async () => {
    const skusUrl = joinUrl(gcp.url, '/v1/services/6F81-5844-456A/skus');
    const skus = await listAllPages(skusUrl, { itemsKey: 'skus', pageSize: ['pageSize', 7] }, settings);
    expect(skus.length).toBeGreaterThan(7);
    expect(skus).toEqual(gcp.skus);

    const machineTypesUrl = joinUrl(
      gcp.computeUrl,
      `/projects/${gcp.project}/zones/us-central1-a/machineTypes`,
    );
    const machineTypes = await listAllPages(
      machineTypesUrl,
      { itemsKey: 'items', pageSize: ['maxResults', 5] },
      settings,
    );
    expect(machineTypes.map((each) => (each as { name: string }).name)).toEqual(
      gcp.data.machineTypesIn('us-central1-a').map((each) => each.name),
    );
  });

  it("reports Google's error message with the status and the path", async () => {
    const url = joinUrl(gcp.computeUrl, `/projects/${gcp.project}/zones/mars-central1-a/machineTypes`);
    await expect(getJson(url, settings)).rejects.toThrow(
      new RegExp(
        `^GET ${gcp.computeUrl}/projects/${gcp.project}/zones/mars-central1-a/machineTypes answered 404: .+`,
      ),
    );
    const unauthorized = { token: async () => 'not-a-token' };
    await expect(getJson(url, unauthorized)).rejects.toMatchObject({
      statusCode: 401,
      message: expect.stringMatching(/answered 401: Request had invalid authentication credentials/),
    });
  });
});

describe('calls and retries', () => {
  const origin = 'https://compute.example';
  const url = new URL(`${origin}/compute/v1/projects/p/zones/z1-a/instances`);
  const fast = { token: async () => 'token', retryBaseDelayMs: 1 };

  it('sends the JSON body, retries a 503 and answers the JSON', async () => {
    const bodies: string[] = [];
    const pool = agent.get(origin);
    pool
      .intercept({ path: url.pathname, method: 'POST' })
      .reply(503, { error: { message: 'Backend Error', errors: [{ reason: 'backendError' }] } });
    pool.intercept({ path: url.pathname, method: 'POST' }).reply((request) => {
      bodies.push(String(request.body));
      return { statusCode: 200, data: { name: 'operation-1' } };
    });
    await expect(callGoogleApi('POST', url, { name: 'vm' }, { ...fast, dispatcher: agent })).resolves.toEqual(
      {
        name: 'operation-1',
      },
    );
    expect(bodies).toEqual(['{"name":"vm"}']);
  });

  it("reads Google's reason and gives up after maxAttempts", async () => {
    agent
      .get(origin)
      .intercept({ path: url.pathname, method: 'POST' })
      .reply(429, { error: { message: 'Rate Limit Exceeded', errors: [{ reason: 'rateLimitExceeded' }] } })
      .times(2);
    const failure = await callGoogleApi(
      'POST',
      url,
      {},
      { ...fast, dispatcher: agent, maxAttempts: 2 },
    ).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(GcpApiCallError);
    expect(failure).toMatchObject({
      statusCode: 429,
      reason: 'rateLimitExceeded',
      message: `POST ${url} answered 429: Rate Limit Exceeded`,
    });
  });

  it("retries a GET's transport error but not a POST's (it may have reached Google)", async () => {
    const pool = agent.get(origin);
    pool.intercept({ path: url.pathname, method: 'GET' }).replyWithError(new Error('socket hang up'));
    pool.intercept({ path: url.pathname, method: 'GET' }).reply(200, { items: [] });
    pool.intercept({ path: url.pathname, method: 'POST' }).replyWithError(new Error('socket hang up'));
    pool.intercept({ path: url.pathname, method: 'POST' }).reply(200, {});
    await expect(getJson(url, { ...fast, dispatcher: agent })).resolves.toEqual({ items: [] });
    await expect(callGoogleApi('POST', url, {}, { ...fast, dispatcher: agent })).rejects.toThrow(
      `POST ${url} failed: socket hang up`,
    );
  });

  it('reports a failed token exchange as GcpTokenError, without calling Google', async () => {
    const refused = {
      token: async () => {
        throw new Error('invalid_grant: Invalid JWT Signature.');
      },
      dispatcher: agent,
    };
    const failure = await getJson(url, refused).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(GcpTokenError);
    expect((failure as Error).message).toBe(
      'Cannot get a GCP access token: invalid_grant: Invalid JWT Signature.',
    );
  });
});

describe('machine types of a zone', () => {
  it('skips DEPRECATED types and those whose accelerator gpuhunt does not know', async () => {
    agent
      .get('https://compute.example')
      .intercept({ path: (path) => path.startsWith('/compute/v1/projects/p/zones/z1-a/machineTypes') })
      .reply(200, {
        items: [
          { name: 'n1-standard-1', guestCpus: 1, memoryMb: 3840 },
          { name: 'n1-old-1', guestCpus: 1, memoryMb: 3840, deprecated: { state: 'DEPRECATED' } },
          // gpuhunt skips only DEPRECATED: an OBSOLETE type is still listed.
          { name: 'n1-obsolete-1', guestCpus: 1, memoryMb: 1024, deprecated: { state: 'OBSOLETE' } },
          {
            name: 'x9-futuregpu-1g',
            guestCpus: 8,
            memoryMb: 65536,
            accelerators: [{ guestAcceleratorType: 'nvidia-x9', guestAcceleratorCount: 1 }],
          },
          {
            name: 'g2-standard-4',
            guestCpus: 4,
            memoryMb: 16384,
            accelerators: [{ guestAcceleratorType: 'nvidia-l4', guestAcceleratorCount: 1 }],
          },
        ],
      });
    const progress: string[] = [];
    const machineTypes = await listMachineTypes(['z1-a'], {
      computeUrl: 'https://compute.example/compute/v1',
      project: 'p',
      token: async () => 'token',
      dispatcher: agent,
      onProgress: (line) => progress.push(line),
    });
    expect(machineTypes).toEqual([
      {
        instanceName: 'n1-standard-1',
        zone: 'z1-a',
        cpu: 1,
        memory: 3.8,
        gpuCount: 0,
        acceleratorType: null,
      },
      { instanceName: 'n1-obsolete-1', zone: 'z1-a', cpu: 1, memory: 1, gpuCount: 0, acceleratorType: null },
      {
        instanceName: 'g2-standard-4',
        zone: 'z1-a',
        cpu: 4,
        memory: 16,
        gpuCount: 1,
        acceleratorType: 'nvidia-l4',
      },
    ]);
    expect(progress).toEqual([
      'gcp: warning: unknown accelerator type nvidia-x9 of x9-futuregpu-1g in z1-a; skipped',
    ]);
  });

  it('names the item and field of an answer it cannot read', async () => {
    agent
      .get('https://compute.example')
      .intercept({ path: (path) => path.startsWith('/compute/v1/projects/p/zones/z1-a/machineTypes') })
      .reply(200, { items: [{ name: 'n1-standard-1', guestCpus: '1', memoryMb: 3840 }] });
    await expect(
      listMachineTypes(['z1-a'], {
        computeUrl: 'https://compute.example/compute/v1',
        project: 'p',
        token: async () => 'token',
        dispatcher: agent,
      }),
    ).rejects.toThrow(/^machineTypes\.list\(z1-a\) items\[0\]\.guestCpus: /);
  });
});
