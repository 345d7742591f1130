/**
 * The gateway agent on loopback: a state sent to its management API is served over HTTPS with
 * its certificate (token checked, replicas in turn, the token not passed on), plain HTTP
 * redirects, and a restarted agent serves the stored state with no one sending it again.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GatewayState } from '@dstack/core/agent-protocol';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayServer } from './gateway-server.js';
import { GATEWAY_API_HEADERS, listenOnLoopback, startLoopbackGateway } from './gateway-test.test.helpers.js';

const TOKEN = 'member-token';
/** The gateway's agent token, which its management API requires. */

function selfSignedWildcard(dir: string): { certificate: string; privateKey: string } {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=*.example.test',
      '-addext',
      'subjectAltName=DNS:*.example.test',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ],
    { stdio: 'pipe' },
  );
  return {
    certificate: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    privateKey: readFileSync(join(dir, 'key.pem'), 'utf8'),
  };
}

/** A replica that answers with what it saw. */
async function startReplica(name: string): Promise<{ server: Server; url: string }> {
  const server = createServer((incoming, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        replica: name,
        path: incoming.url,
        authorization: incoming.headers.authorization ?? null,
        proto: incoming.headers['x-forwarded-proto'] ?? null,
      }),
    );
  });
  return { server, url: `http://127.0.0.1:${await listenOnLoopback(server)}` };
}

describe('the gateway agent', () => {
  const home = mkdtempSync(join(tmpdir(), 'dstack-gateway-'));
  const { certificate, privateKey } = selfSignedWildcard(home);
  const client = new Agent({
    connect: {
      ca: certificate,
      lookup: (_hostname, options, callback) =>
        options.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4),
    },
  });
  let gateway: GatewayServer;
  let replicas: Array<{ server: Server; url: string }>;

  const start = () => startLoopbackGateway(home);
  const putState = async (state: unknown) => {
    const answer = await request(`http://127.0.0.1:${gateway.apiPort}/api/state`, {
      method: 'PUT',
      headers: GATEWAY_API_HEADERS,
      body: JSON.stringify(state),
    });
    return { status: answer.statusCode, body: await answer.body.text() };
  };
  const get = async (hostname: string, path: string, token?: string) => {
    const answer = await request(`https://${hostname}:${gateway.httpsPort}${path}`, {
      dispatcher: client,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    const text = await answer.body.text();
    return { status: answer.statusCode, body: text.startsWith('{') ? JSON.parse(text) : text };
  };

  beforeAll(async () => {
    replicas = [await startReplica('a'), await startReplica('b')];
    gateway = await start();
    const state: GatewayState = {
      certificate: { certificate, private_key: privateKey },
      acme: null,
      services: [
        {
          project: 'main',
          run_name: 'svc',
          run_id: 'run-svc',
          hostname: 'svc.example.test',
          auth: true,
          https: true,
          replicas: replicas.map((replica, index) => ({ id: `job-${index}`, url: replica.url })),
          scales_from_zero: false,
          rate_limits: [],
        },
        {
          project: 'main',
          run_name: 'open',
          run_id: 'run-open',
          hostname: 'open.example.test',
          auth: false,
          https: true,
          replicas: [],
          scales_from_zero: false,
          rate_limits: [],
        },
      ],
      token_hashes: { main: [createHash('sha256').update(TOKEN).digest('hex')] },
    };
    expect((await putState(state)).status).toBe(200);
  });

  afterAll(async () => {
    await gateway?.close();
    await client.close();
    for (const replica of replicas ?? []) replica.server.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('serves a service over HTTPS with a member token, replicas in turn, the token kept from the replica', async () => {
    const first = await get('svc.example.test', '/v1/models?x=1', TOKEN);
    const second = await get('svc.example.test', '/', TOKEN);
    expect(first).toMatchObject({
      status: 200,
      body: { path: '/v1/models?x=1', authorization: null, proto: 'https' },
    });
    expect(new Set([first.body.replica, second.body.replica])).toEqual(new Set(['a', 'b']));
  });

  it('refuses a missing or foreign token (403), an unknown host (404), and has no replica to give (503)', async () => {
    expect((await get('svc.example.test', '/')).status).toBe(403);
    expect((await get('svc.example.test', '/', 'someone-else')).status).toBe(403);
    expect((await get('nothing.example.test', '/', TOKEN)).status).toBe(404);
    expect((await get('open.example.test', '/')).status).toBe(503);
  });

  it('redirects plain HTTP to HTTPS', async () => {
    const answer = await request(`http://127.0.0.1:${gateway.httpPort}/path`, {
      headers: { host: 'svc.example.test' },
    });
    await answer.body.dump();
    expect(answer.statusCode).toBe(301);
    expect(answer.headers.location).toBe('https://svc.example.test/path');
  });

  it('refuses a bad state and keeps serving the last one', async () => {
    const refused = await putState({ certificate: null, services: 'none' });
    expect(refused.status).toBe(400);
    expect((await get('svc.example.test', '/', TOKEN)).status).toBe(200);
  });

  it('serves its stored state after a restart, with nobody sending it again', async () => {
    await gateway.close();
    gateway = await start();
    expect(gateway.httpsPort).not.toBeNull();
    expect((await get('svc.example.test', '/', TOKEN)).status).toBe(200);
  });
});
