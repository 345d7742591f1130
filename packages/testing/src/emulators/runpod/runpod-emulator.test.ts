/**
 * The RunPod emulator's wire behaviour a client depends on (keys, GraphQL validation and errors,
 * the gpuhunt bucket) and its command; what the backend does with it is backend-runpod's tests.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type RunpodEmulator, startRunpodEmulator } from './runpod-emulator.js';
import { runRunpodEmulatorCommand } from './runpod-emulator-command.js';
import { dockerArgumentsOf, tcpPortsOf } from './runpod-pods.js';

let emulator: RunpodEmulator;

beforeAll(async () => {
  emulator = await startRunpodEmulator();
});

afterAll(async () => {
  await emulator?.close();
});

async function graphql(query: string, variables: unknown = {}, key?: string) {
  const response = await request(emulator.graphqlUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  const text = await response.body.text();
  return { status: response.statusCode, body: text.startsWith('{') ? JSON.parse(text) : text };
}

describe('RunPod emulator', () => {
  it('answers the catalog queries without a key, and everything else only with the account’s key', async () => {
    const anonymous = await graphql('{ countryCodes dataCenters { id listed } }');
    const myself = await graphql('{ myself { id } }');
    const wrongKey = await graphql('{ countryCodes }', {}, 'not-the-key');
    const withKey = await graphql('{ myself { email } }', {}, emulator.apiKey);

    expect(anonymous.status).toBe(200);
    expect(anonymous.body.data.countryCodes).toEqual(['US', 'CZ', 'SE', null]);
    expect(myself.status).toBe(401);
    expect(wrongKey.status).toBe(401);
    expect(withKey.body).toEqual({ data: { myself: { email: 'emulator@example.com' } } });
  });

  it('validates queries against RunPod’s schema (400), and answers a refused operation in errors with 200', async () => {
    const unknownField = await graphql('{ gpuTypes { id noSuchField } }');
    const unknownPod = await graphql(
      'mutation { podTerminate(input: {podId: "nope"}) }',
      {},
      emulator.apiKey,
    );

    expect(unknownField.status).toBe(400);
    expect(unknownField.body.errors[0].message).toContain('noSuchField');
    expect(unknownPod.status).toBe(200);
    expect(unknownPod.body.errors[0].message).toBe('pod not found to terminate');
  });

  it('deploys with dstack’s inline literals too, taking the GPUs from the stock', async () => {
    const before = await graphql(
      '{ gpuTypes { id lowestPrice(input: {gpuCount: 8, dataCenterId: "US-TX-3", secureCloud: true}) { stockStatus } } }',
    );
    const deployed = await graphql(
      `mutation { podFindAndDeployOnDemand(input: { name: "p", imageName: "busybox", gpuTypeId: "NVIDIA L4",
        cloudType: SECURE, dataCenterId: "US-TX-3", gpuCount: 4, ports: "10022/tcp",
        env: [{ key: "A", value: "1" }] }) { id costPerHr gpuCount env } }`,
      {},
      emulator.apiKey,
    );
    const again = await graphql(
      'mutation { podFindAndDeployOnDemand(input: { imageName: "busybox", gpuTypeId: "NVIDIA L4", cloudType: SECURE, gpuCount: 1 }) { id } }',
      {},
      emulator.apiKey,
    );

    const h100 = before.body.data.gpuTypes.find(
      (each: { id: string }) => each.id === 'NVIDIA H100 80GB HBM3',
    );
    expect(h100.lowestPrice.stockStatus).toBe('Low');
    expect(deployed.body.data.podFindAndDeployOnDemand).toMatchObject({
      costPerHr: 1.72,
      gpuCount: 4,
      env: ['A=1'],
    });
    // The L4s of US-TX-3 are all taken now.
    expect(again.body.errors[0].message).toMatch(/no longer any instances available/);
    await emulator.removeInstance(deployed.body.data.podFindAndDeployOnDemand.id);
  });

  it('serves gpuhunt’s v3 layout: runpod from its stock, the other providers from the bundled snapshot', async () => {
    const version = (await (await request(`${emulator.catalogUrl}/runpod/version`)).body.text()).trim();
    const zip = await request(`${emulator.catalogUrl}/runpod/${version}/catalog.zip`);
    const aws = await request(`${emulator.catalogUrl}/aws/version`);
    const outside = await request(`${emulator.catalogUrl}/..%2F..%2Fetc/version`);

    expect(version).toMatch(/^\d{8}-[0-9a-f]{8}$/);
    expect(zip.statusCode).toBe(200);
    expect((await zip.body.arrayBuffer()).byteLength).toBeGreaterThan(100);
    expect(aws.statusCode).toBe(200);
    await aws.body.dump();
    expect(outside.statusCode).toBe(404);
    await outside.body.dump();
  });

  it('reads dockerArgs as dstack writes them (JSON entrypoint and cmd) or as a command, and publishes the TCP ports', () => {
    expect(dockerArgumentsOf(JSON.stringify({ cmd: ['echo hi'], entrypoint: ['/bin/sh', '-c'] }))).toEqual({
      entrypoint: '/bin/sh',
      command: ['-c', 'echo hi'],
    });
    expect(dockerArgumentsOf('sleep infinity')).toEqual({ command: ['sleep', 'infinity'] });
    expect(tcpPortsOf('10022/tcp, 8888/http')).toEqual([{ containerPort: 10022, protocol: 'tcp' }]);
  });
});

describe('emulator runpod', () => {
  it('writes a server config.yml pointing project main at the emulator and the catalog at its bucket, runs until stopped', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'runpod-emulator-command-'));
    try {
      const file = join(directory, 'config.yml');
      const stop = new AbortController();
      const lines: string[] = [];
      let ready: (emulator: RunpodEmulator) => void = () => {};
      const started = new Promise<RunpodEmulator>((resolve) => {
        ready = resolve;
      });
      const running = runRunpodEmulatorCommand(
        ['--server-config', file, '--fault', 'RATE_LIMITED:podTerminate'],
        {
          signal: stop.signal,
          log: (line) => lines.push(line),
          onReady: (started) => ready(started),
        },
      );
      const commandEmulator = await started;

      expect(parse(await readFile(file, 'utf8'))).toEqual({
        projects: [
          {
            name: 'main',
            backends: [
              {
                type: 'runpod',
                creds: { type: 'api_key', api_key: commandEmulator.apiKey },
                endpoint_url: commandEmulator.graphqlUrl,
              },
            ],
          },
        ],
        catalog: { url: commandEmulator.catalogUrl },
      });
      expect(commandEmulator.faults()).toMatchObject([
        { code: 'RATE_LIMITED', operation: 'podTerminate', everyNth: 2 },
      ]);
      expect(lines[0]).toContain('RunPod emulator listening on');
      stop.abort();
      await running;
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
