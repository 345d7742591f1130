/**
 * The gateway agent reaches nothing but a service's replicas, and its management API answers only
 * the server. Raw requests written on a TCP socket to the gateway's public port, through an
 * `auth: false` service, whose target names another host (absolute-form, `//host:port/…`,
 * `/\host:port/…`, `*`, CONNECT, and the same in a WebSocket upgrade) are answered 400 and open no
 * connection to a loopback listener they name, nor to the management API; the management API
 * answers 401 without the gateway's token and 403 with another, and changes nothing then. The
 * `dstack-gateway` command does not start without a token it alone may read.
 */
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GatewayState } from '@dstack/core/agent-protocol';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GATEWAY_BUNDLE_PATH } from '../paths.js';
import {
  buildIfMissing,
  type Child,
  eventually,
  killChild,
  spawnNode,
  waitForExit,
} from '../testing/shim-test.test.helpers.js';
import type { GatewayServer } from './gateway-server.js';
import {
  GATEWAY_API_TOKEN as API_TOKEN,
  gatewayService,
  listenOnLoopback,
  startLoopbackGateway,
} from './gateway-test.test.helpers.js';

const MEMBER_TOKEN = 'member-token';
const ORIGIN_FORM_REFUSAL = 'must be a path that starts with a single "/"';

/** A loopback HTTP server that counts the connections made to it and remembers the targets it was asked for. */
async function startListener(
  name: string,
): Promise<{ server: Server; port: number; connections: () => number; targets: string[] }> {
  let connections = 0;
  const targets: string[] = [];
  const server = createServer((incoming, response) => {
    targets.push(incoming.url ?? '');
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ answeredBy: name, url: incoming.url }));
  });
  server.on('connection', () => {
    connections += 1;
  });
  server.on('upgrade', (incoming, socket) => {
    targets.push(incoming.url ?? '');
    socket.end('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n');
  });
  return { server, port: await listenOnLoopback(server), connections: () => connections, targets };
}

/** Writes `head` (and `body`) on a new connection to `port` and reads until the gateway closes it. */
function rawExchange(port: number, head: string, body = ''): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`${head}\r\n\r\n${body}`));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      const headEnd = text.indexOf('\r\n\r\n');
      const rest = text.slice(headEnd + 4);
      const chunked = /\r\ntransfer-encoding: chunked\r\n/i.test(text.slice(0, headEnd + 2));
      resolve({ status, body: chunked ? dechunked(rest) : rest });
    });
  });
}

/** The body of a chunked answer (sizes in hex, each chunk followed by CRLF, a 0 size last). */
function dechunked(text: string): string {
  let body = '';
  let at = 0;
  for (;;) {
    const lineEnd = text.indexOf('\r\n', at);
    const size = Number.parseInt(text.slice(at, lineEnd), 16);
    if (!(size > 0)) return body;
    body += text.slice(lineEnd + 2, lineEnd + 2 + size);
    at = lineEnd + 2 + size + 2;
  }
}

describe('the gateway agent forwards only to replicas; its management API answers only the server', () => {
  const home = mkdtempSync(join(tmpdir(), 'dstack-gateway-isolation-'));
  let gateway: GatewayServer;
  let replica: Awaited<ReturnType<typeof startListener>>;
  let bait: Awaited<ReturnType<typeof startListener>>;

  const api = (path: string, init: { method?: 'GET' | 'PUT'; token?: string; body?: string } = {}) =>
    request(`http://127.0.0.1:${gateway.apiPort}${path}`, {
      method: init.method ?? 'GET',
      headers: init.token === undefined ? {} : { authorization: `Bearer ${init.token}` },
      ...(init.body === undefined ? {} : { body: init.body }),
    });
  /** What `guarded` answers a client without a token: 403 while the state the server sent is served. */
  const guardedWithoutToken = async () => {
    const answer = await request(`http://127.0.0.1:${gateway.httpPort}/`, {
      headers: { host: 'guarded.example.test' },
    });
    await answer.body.dump();
    return answer.statusCode;
  };
  /** A state that opens `guarded` to anyone and sends its traffic to the bait. */
  const hostileState = (): GatewayState => ({
    certificate: null,
    acme: null,
    services: [
      gatewayService('guarded', {
        auth: false,
        replicas: [{ id: 'evil', url: `http://127.0.0.1:${bait.port}` }],
      }),
    ],
    token_hashes: {},
  });

  beforeAll(async () => {
    replica = await startListener('replica');
    bait = await startListener('bait');
    gateway = await startLoopbackGateway(home);
    const replicas = [{ id: 'job-1', url: `http://127.0.0.1:${replica.port}` }];
    const state: GatewayState = {
      certificate: null,
      acme: null,
      services: [gatewayService('open', { replicas }), gatewayService('guarded', { auth: true, replicas })],
      token_hashes: { main: [createHash('sha256').update(MEMBER_TOKEN).digest('hex')] },
    };
    const put = await api('/api/state', { method: 'PUT', token: API_TOKEN, body: JSON.stringify(state) });
    expect(put.statusCode, await put.body.text()).toBe(200);
  });

  afterAll(async () => {
    await gateway?.close();
    for (const listener of [replica, bait]) listener?.server.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('answers 400 to a target that is not a path, connecting nowhere, and passes a path to the replica as it is', async () => {
    const targets = [
      `http://127.0.0.1:${bait.port}/x`,
      `//127.0.0.1:${bait.port}/x`,
      `/\\127.0.0.1:${bait.port}/x`,
      '*',
    ];
    for (const target of targets) {
      const answer = await rawExchange(
        gateway.httpPort,
        `GET ${target} HTTP/1.1\r\nhost: open.example.test\r\nconnection: close`,
      );
      expect(answer.status, target).toBe(400);
      expect(JSON.parse(answer.body).detail[0].msg).toContain(ORIGIN_FORM_REFUSAL);
    }
    const tunnel = await rawExchange(
      gateway.httpPort,
      `CONNECT 127.0.0.1:${bait.port} HTTP/1.1\r\nhost: 127.0.0.1:${bait.port}`,
    );
    expect(tunnel.status).toBe(400);
    expect(bait.connections()).toBe(0);
    expect(replica.targets).toEqual([]);

    // A path is sent to the replica untouched, even with `//` after its start.
    const path = `/a//127.0.0.1:${bait.port}/b?next=//elsewhere`;
    const passed = await rawExchange(
      gateway.httpPort,
      `GET ${path} HTTP/1.1\r\nhost: open.example.test\r\nconnection: close`,
    );
    expect(passed.status).toBe(200);
    expect(JSON.parse(passed.body)).toEqual({ answeredBy: 'replica', url: path });
    expect(bait.connections()).toBe(0);
  });

  it('does not let a client reach the management API through a service', async () => {
    const apiAuthority = `127.0.0.1:${gateway.apiPort}`;
    for (const target of [`//${apiAuthority}/api/healthcheck`, `http://${apiAuthority}/api/healthcheck`]) {
      const health = await rawExchange(
        gateway.httpPort,
        `GET ${target} HTTP/1.1\r\nhost: open.example.test\r\nconnection: close`,
      );
      expect(health.status, target).toBe(400);
      expect(health.body).not.toContain('dstack-gateway');
    }
    const body = JSON.stringify(hostileState());
    for (const target of [`//${apiAuthority}/api/state`, `http://${apiAuthority}/api/state`]) {
      const put = await rawExchange(
        gateway.httpPort,
        `PUT ${target} HTTP/1.1\r\nhost: open.example.test\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close`,
        body,
      );
      expect(put.status, target).toBe(400);
    }
    expect(await guardedWithoutToken()).toBe(403);
    expect(bait.connections()).toBe(0);
  });

  it('answers 400 to an upgrade whose target is not a path, connecting nowhere', async () => {
    const upgradeCountBefore = replica.targets.length;
    for (const target of [
      `//127.0.0.1:${bait.port}/ws`,
      `http://127.0.0.1:${bait.port}/ws`,
      `//127.0.0.1:${gateway.apiPort}/api/healthcheck`,
    ]) {
      const answer = await rawExchange(
        gateway.httpPort,
        `GET ${target} HTTP/1.1\r\nhost: open.example.test\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==`,
      );
      expect(answer.status, target).toBe(400);
      expect(JSON.parse(answer.body).detail[0].msg).toContain(ORIGIN_FORM_REFUSAL);
    }
    expect(bait.connections()).toBe(0);
    expect(replica.targets.length).toBe(upgradeCountBefore);
  });

  it('answers its management API only with its token: 401 without, 403 with another, and does nothing then', async () => {
    const calls = [
      { path: '/api/healthcheck' },
      { path: '/api/stats/collect' },
      { path: '/api/state', method: 'PUT' as const, body: JSON.stringify(hostileState()) },
    ];
    for (const call of calls) {
      const without = await api(call.path, call);
      expect(without.statusCode, call.path).toBe(401);
      expect(await without.body.text()).toContain('requires its token');
      const wrong = await api(call.path, { ...call, token: `${API_TOKEN}x` });
      expect(wrong.statusCode, call.path).toBe(403);
      await wrong.body.dump();
      const member = await api(call.path, { ...call, token: MEMBER_TOKEN });
      expect(member.statusCode, call.path).toBe(403);
      await member.body.dump();
    }
    expect(await guardedWithoutToken()).toBe(403);
    expect(bait.connections()).toBe(0);

    const health = await api('/api/healthcheck', { token: API_TOKEN });
    expect(health.statusCode).toBe(200);
    expect(await health.body.json()).toMatchObject({ service: 'dstack-gateway', services: 2 });
  });
});

describe('the dstack-gateway command', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dstack-gateway-command-'));
  const environment = { ...process.env };
  delete environment.DSTACK_GATEWAY_TOKEN;

  /** Every agent started here: one that should have refused to start and did not is stopped after. */
  const started: Child[] = [];

  beforeAll(() => buildIfMissing(GATEWAY_BUNDLE_PATH, '@dstack/shim'), 180_000);
  afterAll(async () => {
    for (const child of started) await killChild(child);
    rmSync(dir, { recursive: true, force: true });
  });

  const run = (args: string[]) => {
    const spawned = spawnNode(GATEWAY_BUNDLE_PATH, ['--home', join(dir, 'home'), ...args], environment);
    started.push(spawned.child);
    return spawned;
  };

  it('does not start without a token, nor with a token file others may read', async () => {
    const without = run(['--api-port', '0', '--http-port', '0', '--https-port', '0']);
    expect(await waitForExit(without.child)).toBe(1);
    expect(without.output()).toContain('--token-file (or DSTACK_GATEWAY_TOKEN) is required');

    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${API_TOKEN}\n`);
    chmodSync(tokenFile, 0o644);
    const readable = run([
      '--token-file',
      tokenFile,
      '--api-port',
      '0',
      '--http-port',
      '0',
      '--https-port',
      '0',
    ]);
    expect(await waitForExit(readable.child)).toBe(1);
    expect(readable.output()).toContain('may be read by other users');
  });

  it('serves its management API to the holder of the token in its file only', async () => {
    const tokenFile = join(dir, 'token-0600');
    writeFileSync(tokenFile, `${API_TOKEN}\n`, { mode: 0o600 });
    const agent = run([
      '--token-file',
      tokenFile,
      '--api-port',
      '0',
      '--http-port',
      '0',
      '--https-port',
      '0',
    ]);
    try {
      const apiPort = await eventually(
        () => /API on 127\.0\.0\.1:(\d+)/.exec(agent.output())?.[1],
        'the gateway agent to listen',
      );
      const health = (token?: string) =>
        request(`http://127.0.0.1:${apiPort}/api/healthcheck`, {
          headers: token ? { authorization: `Bearer ${token}` } : {},
        }).then(async (answer) => {
          await answer.body.dump();
          return answer.statusCode;
        });
      expect(await health()).toBe(401);
      expect(await health('another')).toBe(403);
      expect(await health(API_TOKEN)).toBe(200);
    } finally {
      await killChild(agent.child);
    }
  });
});
