/**
 * The gateway agent's traffic rules on loopback, over plain HTTP (no certificate): requests are
 * counted per service for the server's autoscaler (`GET /api/stats/collect`), `rate_limits` answer
 * 429 with `Retry-After` per client key, and a request to a service scaled to zero is held, shown
 * as waiting, until a state with a replica arrives (or answered 503 when none comes in time).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect, createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type GatewayService, type GatewayStats, GatewayStatsSchema } from '@dstack/core/agent-protocol';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayServer } from './gateway-server.js';
import {
  GATEWAY_API_HEADERS,
  gatewayService,
  listenOnLoopback,
  startLoopbackGateway,
} from './gateway-test.test.helpers.js';

/** Short, so the test of a wait that ends without a replica stays quick. */
const WAIT_MS = 2_000;

describe('the gateway agent counts, limits and holds requests', () => {
  const home = mkdtempSync(join(tmpdir(), 'dstack-gateway-traffic-'));
  let gateway: GatewayServer;
  let replica: { server: Server; url: string };
  // Accepts connections and drops them unanswered, as a replica going away (or a port forward to one not listening yet).
  let dropper: { server: TcpServer; url: string };
  let services: GatewayService[];

  const putState = async (next: GatewayService[]) => {
    services = next;
    const answer = await request(`http://127.0.0.1:${gateway.apiPort}/api/state`, {
      method: 'PUT',
      headers: GATEWAY_API_HEADERS,
      body: JSON.stringify({ certificate: null, services, token_hashes: {} }),
    });
    expect(answer.statusCode, await answer.body.text()).toBe(200);
  };
  const get = async (name: string, path = '/', headers: Record<string, string> = {}) => {
    const answer = await request(`http://127.0.0.1:${gateway.httpPort}${path}`, {
      headers: { host: `${name}.example.test`, ...headers },
    });
    return { status: answer.statusCode, headers: answer.headers, body: await answer.body.text() };
  };
  const stats = async (): Promise<GatewayStats> => {
    const answer = await request(`http://127.0.0.1:${gateway.apiPort}/api/stats/collect`, {
      headers: GATEWAY_API_HEADERS,
    });
    expect(answer.statusCode).toBe(200);
    return GatewayStatsSchema.parse(await answer.body.json());
  };
  const statsOf = async (name: string) => {
    const service = (await stats()).services.find((each) => each.run_id === `run-${name}`);
    return {
      requests: (service?.requests ?? []).reduce((sum, [, count]) => sum + count, 0),
      waiting: service?.waiting ?? 0,
    };
  };

  beforeAll(async () => {
    const server = createServer((_incoming, response) => response.end('ok'));
    replica = { server, url: `http://127.0.0.1:${await listenOnLoopback(server)}` };
    const dropping = createTcpServer((socket) => socket.destroy());
    dropper = { server: dropping, url: `http://127.0.0.1:${await listenOnLoopback(dropping)}` };
    gateway = await startLoopbackGateway(home, { scaleFromZeroWaitMs: WAIT_MS });
    const replicas = [{ id: 'job-1', url: replica.url }];
    await putState([
      gatewayService('counted', { replicas }),
      gatewayService('by-header', {
        replicas,
        rate_limits: [{ prefix: '/v1', key: { type: 'header', header: 'X-Api-Key' }, rps: 1, burst: 1 }],
      }),
      gatewayService('by-address', {
        replicas,
        rate_limits: [{ prefix: '/', key: { type: 'ip_address' }, rps: 0.1, burst: 0 }],
      }),
      gatewayService('zero', { scales_from_zero: true }),
      gatewayService('fixed', {}),
      gatewayService('dropping', {
        replicas: [
          { id: 'job-d', url: dropper.url },
          { id: 'job-1', url: replica.url },
        ],
      }),
    ]);
  });

  afterAll(async () => {
    await gateway?.close();
    replica?.server.close();
    dropper?.server.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('counts the requests it forwards per service, on its clock', async () => {
    const before = await statsOf('counted');
    for (let index = 0; index < 3; index += 1) expect((await get('counted')).status).toBe(200);
    expect(await statsOf('counted')).toEqual({ requests: before.requests + 3, waiting: 0 });
    const report = await stats();
    const seconds = report.services.find((each) => each.run_id === 'run-counted')?.requests ?? [];
    for (const [second] of seconds) expect(second).toBeLessThanOrEqual(Math.floor(report.now / 1000));
  });

  it('answers 429 with Retry-After past a limit, per header value under the prefix, and counts only what it forwards', async () => {
    const key = { 'x-api-key': 'a' };
    expect((await get('by-header', '/v1/chat', key)).status).toBe(200);
    expect((await get('by-header', '/v1/chat', key)).status).toBe(200);
    const limited = await get('by-header', '/v1/chat', key);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(limited.body).detail[0].msg).toContain('Too many requests to service by-header');
    // Another key has its own bucket; no header, or a path outside the prefix, is not limited.
    expect((await get('by-header', '/v1/chat', { 'x-api-key': 'b' })).status).toBe(200);
    for (let index = 0; index < 3; index += 1) expect((await get('by-header', '/v1/chat')).status).toBe(200);
    for (let index = 0; index < 3; index += 1)
      expect((await get('by-header', '/health', key)).status).toBe(200);
    expect((await statsOf('by-header')).requests).toBe(9);
  });

  it('limits by the client address, WebSocket upgrades too', async () => {
    expect((await get('by-address')).status).toBe(200);
    const limited = await get('by-address');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const upgrade = await new Promise<string>((resolve, reject) => {
      const socket = connect(gateway.httpPort, '127.0.0.1', () =>
        socket.write(
          'GET /ws HTTP/1.1\r\nhost: by-address.example.test\r\nconnection: Upgrade\r\nupgrade: websocket\r\n\r\n',
        ),
      );
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk.toString();
      });
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(upgrade).toMatch(/^HTTP\/1\.1 429 Too Many Requests\r\nretry-after: \d+\r\n/);
  });

  it('holds a request to a service at zero, reports it waiting, and forwards it once a replica arrives', async () => {
    const held = get('zero', '/first');
    let waiting = 0;
    for (let attempt = 0; attempt < 50 && waiting === 0; attempt += 1) {
      waiting = (await statsOf('zero')).waiting;
      if (waiting === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(waiting).toBe(1);
    await putState(
      services.map((each) =>
        each.run_name === 'zero' ? { ...each, replicas: [{ id: 'job-z', url: replica.url }] } : each,
      ),
    );
    expect(await held).toMatchObject({ status: 200, body: 'ok' });
    expect(await statsOf('zero')).toEqual({ requests: 1, waiting: 0 });
  });

  it('answers 503 when no replica comes in time, and at once for a service that does not scale from zero', async () => {
    await putState(services.map((each) => (each.run_name === 'zero' ? { ...each, replicas: [] } : each)));
    const unserved = await get('zero');
    expect(unserved.status).toBe(503);
    expect(unserved.headers['retry-after']).toBe('5');
    expect((await statsOf('zero')).waiting).toBe(0);
    expect((await get('fixed')).status).toBe(503);
    expect((await statsOf('fixed')).waiting).toBe(0);
  });

  it('sends a bodiless request a replica drops unanswered to the next one', async () => {
    for (let index = 0; index < 4; index += 1) {
      expect(await get('dropping')).toMatchObject({ status: 200, body: 'ok' });
    }
  });
});
