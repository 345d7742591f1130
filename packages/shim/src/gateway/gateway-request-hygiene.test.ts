/**
 * What the gateway agent makes of a request's path and headers, on loopback over plain HTTP:
 * `rate_limits` match the normalised path (an encoded letter, `//`, `/./` or `/x/../` reach the
 * same limit as the plain path), a caller's dstack token never reaches a service (while a
 * service's own API key does), and `X-Real-IP` is the gateway's peer, not what the client says.
 * Requests go out with node:http: `fetch` and undici resolve dot segments before sending.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayServer } from './gateway-server.js';
import {
  GATEWAY_API_HEADERS,
  gatewayService,
  listenOnLoopback,
  startLoopbackGateway,
} from './gateway-test.test.helpers.js';

const MEMBER_TOKEN = 'member-token';

/** What the echo replica saw. */
interface Echo {
  url: string;
  authorization: string | null;
  realIp: string | null;
  forwardedFor: string | null;
}

function echoOf(url: string | undefined, headers: IncomingHttpHeaders): Echo {
  return {
    url: url ?? '',
    authorization: headers.authorization ?? null,
    realIp: (headers['x-real-ip'] as string | undefined) ?? null,
    forwardedFor: (headers['x-forwarded-for'] as string | undefined) ?? null,
  };
}

/** A replica answering every request with what it saw; an upgrade is answered 200 the same way, unswitched. */
async function startEchoReplica(): Promise<{ server: Server; url: string }> {
  const server = createServer((incoming, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(echoOf(incoming.url, incoming.headers)));
  });
  server.on('upgrade', (incoming, socket) => {
    const body = JSON.stringify(echoOf(incoming.url, incoming.headers));
    socket.end(`HTTP/1.1 200 OK\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  });
  return { server, url: `http://127.0.0.1:${await listenOnLoopback(server)}` };
}

describe('the gateway agent normalises paths for rate limits and keeps dstack tokens from services', () => {
  const home = mkdtempSync(join(tmpdir(), 'dstack-gateway-hygiene-'));
  let gateway: GatewayServer;
  let replica: { server: Server; url: string };

  /** `path` exactly as written on the request line. */
  const get = (name: string, path: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = httpRequest({
        host: '127.0.0.1',
        port: gateway.httpPort,
        path,
        headers: { host: `${name}.example.test`, ...headers },
      });
      request.on('response', (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          body += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      });
      request.on('error', reject);
      request.end();
    });
  const echo = async (name: string, path: string, headers: Record<string, string> = {}) => {
    const answer = await get(name, path, headers);
    expect(answer.status, answer.body).toBe(200);
    return JSON.parse(answer.body) as Echo;
  };
  /** An upgrade request on a raw socket; the echo answers it unswitched, with what it saw. */
  const upgradeEcho = (name: string, headers: Record<string, string>) =>
    new Promise<Echo>((resolve, reject) => {
      const socket = connect(gateway.httpPort, '127.0.0.1', () => {
        const lines = [
          'GET /ws HTTP/1.1',
          `host: ${name}.example.test`,
          'connection: Upgrade',
          'upgrade: websocket',
          ...Object.entries(headers).map(([header, value]) => `${header}: ${value}`),
        ];
        socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      });
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk.toString();
      });
      socket.on('end', () => resolve(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as Echo));
      socket.on('error', reject);
    });

  beforeAll(async () => {
    replica = await startEchoReplica();
    gateway = await startLoopbackGateway(home);
    const replicas = [{ id: 'job-1', url: replica.url }];
    const services = [
      gatewayService('limited', {
        replicas,
        rate_limits: [
          // One request per client key, then 429 for a minute: a second request shows which bucket it took.
          { prefix: '/limited', key: { type: 'header', header: 'x-client' }, rps: 1 / 60, burst: 0 },
          { prefix: '/v1/embeddings', key: { type: 'header', header: 'x-client' }, rps: 1 / 60, burst: 0 },
        ],
      }),
      gatewayService('open', { replicas }),
      gatewayService('closed', { replicas, auth: true }),
    ];
    const tokenHashes = { main: [createHash('sha256').update(MEMBER_TOKEN).digest('hex')] };
    const answer = await fetch(`http://127.0.0.1:${gateway.apiPort}/api/state`, {
      method: 'PUT',
      headers: GATEWAY_API_HEADERS,
      body: JSON.stringify({ certificate: null, services, token_hashes: tokenHashes }),
    });
    expect(answer.status, await answer.text()).toBe(200);
  });

  afterAll(async () => {
    await gateway?.close();
    replica?.server.close();
    rmSync(home, { recursive: true, force: true });
  });

  it.each([
    ['/%6cimited'],
    ['/%6Cimited/x'],
    ['/./limited'],
    ['/x/../limited'],
    ['/%2e%2e/limited'],
    ['/limited?again=1'],
  ])('limits %s like /limited', async (variant) => {
    const client = { 'x-client': `client ${variant}` };
    expect((await get('limited', '/limited', client)).status).toBe(200);
    expect((await get('limited', variant, client)).status).toBe(429);
  });

  it('refuses //limited instead of forwarding it (a target starting with // is not passed on, see gateway-isolation.test.ts)', async () => {
    const client = { 'x-client': 'client //limited' };
    expect((await get('limited', '//limited', client)).status).toBe(400);
    expect((await get('limited', '/limited', client)).status).toBe(200);
  });

  it('limits an encoded letter or an encoded slash under a longer prefix like the plain path', async () => {
    for (const variant of ['/v1/%65mbeddings', '/v1%2Fembeddings', '/V1/../v1/embeddings/']) {
      const client = { 'x-client': `client ${variant}` };
      expect((await get('limited', variant, client)).status).toBe(200);
      expect((await get('limited', '/v1/embeddings', client)).status).toBe(429);
    }
    // Paths outside every prefix are not limited, however they are written.
    const client = { 'x-client': 'outside' };
    for (let index = 0; index < 3; index += 1) {
      expect((await get('limited', '/%6cimit', client)).status).toBe(200);
      expect((await get('limited', '/limited/../other', client)).status).toBe(200);
    }
  });

  it("drops a caller's dstack token before an auth: false service, and keeps the service's own key", async () => {
    expect((await echo('open', '/', { authorization: `Bearer ${MEMBER_TOKEN}` })).authorization).toBeNull();
    expect((await echo('open', '/', { authorization: `bearer   ${MEMBER_TOKEN}` })).authorization).toBeNull();
    expect((await echo('open', '/', { authorization: 'Bearer app-key' })).authorization).toBe(
      'Bearer app-key',
    );
    expect((await upgradeEcho('open', { authorization: `Bearer ${MEMBER_TOKEN}` })).authorization).toBeNull();
    expect((await upgradeEcho('open', { authorization: 'Bearer app-key' })).authorization).toBe(
      'Bearer app-key',
    );
    // An auth: true service never gets the header: the token in it was dstack's to check.
    expect((await echo('closed', '/', { authorization: `Bearer ${MEMBER_TOKEN}` })).authorization).toBeNull();
  });

  it('sets X-Real-IP to its peer and appends it to X-Forwarded-For, whatever the client sent', async () => {
    const seen = await echo('open', '/', { 'x-real-ip': '203.0.113.66', 'x-forwarded-for': '198.51.100.7' });
    expect(seen.realIp).toBe('127.0.0.1');
    expect(seen.forwardedFor).toBe('198.51.100.7, 127.0.0.1');
  });
});
