/**
 * The in-server service proxy end to end: a real server (SQLite, then Postgres) with the local backend runs
 * a service whose command is a small Node HTTP server echoing what it receives, and echoing
 * raw bytes after a WebSocket handshake; requests go through `/proxy/services/main/{run}/…` as
 * a user of dstack would send them.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import type { Run } from '@dstack/core';
import { findFreePort } from '@dstack/shim';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import {
  receiveUntil,
  requestUpgrade,
  type UpgradeResult,
  WEBSOCKET_KEY,
} from '../src/http/upgrade-request.test.helpers.js';

// Real processes start and stop here; nothing is timed, the limits only catch hangs.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

import { postLargeBody } from './large-upload.js';
import {
  ADMIN_TOKEN,
  applyTask,
  describeEachDatabase,
  type HarnessServer,
  HOST_RESOURCES,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
} from './server-harness.js';

/** What the echo service answers: the request as it reached the replica. */
interface Echo {
  method: string;
  url: string;
  body: string;
  authorization: string | null;
  forwardedPrefix: string | null;
  forwardedHost: string | null;
  hop: string | null;
}

/** `Sec-WebSocket-Accept` for WEBSOCKET_KEY (RFC 6455 §1.3): what the echo's handshake must reach the client with. */
const WEBSOCKET_ACCEPT = 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=';

/**
 * A shell command that waits for `startFile` (when given), then serves the echo on `port`.
 * The JS avoids double quotes, `$` and backticks: it sits inside `node -e "…"`.
 */
function echoServiceCommand(port: number, startFile?: string): string {
  const script = [
    'let release = null;',
    'let tunnelsClosed = 0;',
    "const server = require('http').createServer((request, response) => {",
    // An answer that ends only when another request asks: it shows the proxy streams.
    "  if (request.url === '/stream') { response.write('first;'); release = () => response.end('last'); return; }",
    "  if (request.url === '/release') { if (release) release(); response.end('released'); return; }",
    "  if (request.url === '/tunnels-closed') { response.end(String(tunnelsClosed)); return; }",
    // An answer given on the body's first bytes, before the rest has come.
    "  if (request.url === '/early') { request.once('data', () => response.end('early')); return; }",
    "  let body = '';",
    "  request.on('data', (chunk) => { body += chunk; });",
    "  request.on('end', () => {",
    "    response.setHeader('content-type', 'application/json');",
    "    response.setHeader('x-echo-replica', 'yes');",
    '    const header = (name) => request.headers[name] || null;',
    '    response.end(JSON.stringify({ method: request.method, url: request.url, body,',
    "      authorization: header('authorization'), forwardedPrefix: header('x-forwarded-prefix'),",
    "      forwardedHost: header('x-forwarded-host'), hop: header('x-hop') }));",
    '  });',
    '});',
    // A WebSocket handshake by hand, then raw bytes echoed until the client ends its side.
    "server.on('upgrade', (request, socket, head) => {",
    "  socket.on('error', () => {});",
    "  if (request.url === '/refuse') { const text = 'use /ws instead';",
    "    socket.end('HTTP/1.1 426 Upgrade Required\\r\\nx-echo-replica: yes\\r\\ncontent-length: ' + text.length + '\\r\\n\\r\\n' + text); return; }",
    "  const accept = require('crypto').createHash('sha1')",
    "    .update(request.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');",
    "  socket.write('HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n'",
    "    + 'Sec-WebSocket-Accept: ' + accept + '\\r\\nx-echo-url: ' + request.url",
    "    + '\\r\\nx-echo-authorization: ' + (request.headers.authorization || 'none')",
    "    + '\\r\\nx-echo-prefix: ' + request.headers['x-forwarded-prefix'] + '\\r\\n\\r\\n');",
    '  socket.write(head);',
    "  socket.on('data', (chunk) => socket.write(chunk));",
    "  socket.on('end', () => { tunnelsClosed += 1; socket.end(); });",
    '});',
    `server.listen(${port}, '127.0.0.1');`,
  ].join(' ');
  const wait = startFile ? `while [ ! -f '${startFile}' ]; do sleep 0.05; done; ` : '';
  return `${wait}exec '${process.execPath}' -e "${script}"`;
}

function service(name: string, port: number, command: string, extra: Record<string, unknown> = {}) {
  return {
    type: 'service',
    name,
    port,
    commands: [command],
    resources: HOST_RESOURCES,
    ...extra,
  };
}

describeEachDatabase('the service proxy on the local backend', (databaseUrl) => {
  const temp = makeTempDir();
  let harness: HarnessServer;
  let outsiderToken: string;

  beforeAll(async () => {
    harness = await startHarnessServer({
      databaseUrl: databaseUrl(),
      dir: temp.dir,
      config: localBackendConfig(temp.dir),
    });
    outsiderToken = await harness.createUser('outsider');
  });

  afterAll(async () => {
    await harness.terminateFleetsAndClose();
    temp.remove();
  });

  const proxyUrl = (runName: string, rest = '') =>
    `${harness.server.url}/proxy/services/main/${runName}/${rest}`;
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  /** The proxy's own error answer to an upgrade: its status and error code. */
  function answeredError(result: UpgradeResult): { status: number | undefined; code: string | undefined } {
    if (result.kind !== 'answered') throw new Error('The upgrade switched protocols');
    const error = JSON.parse(result.body) as { detail: Array<{ code: string }> };
    return { status: result.response.statusCode, code: error.detail[0]?.code };
  }

  async function waitForAnswer(url: string, init: RequestInit, status: number): Promise<Response> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const response = await fetch(url, init);
      if (response.status === status || Date.now() > deadline) return response;
      await response.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  it('answers 503 before a replica runs, 502 while it refuses, then forwards with the token', async () => {
    const port = await findFreePort();
    const startFile = join(temp.dir, 'start-echo');
    const applied = await applyTask(harness, service('echo', port, echoServiceCommand(port, startFile)));
    expect(applied.service).toEqual({ url: '/proxy/services/main/echo/', model: null, options: {} });

    // Just applied: the job is still submitted, far from running.
    const early = await fetch(proxyUrl('echo'), { headers: bearer(ADMIN_TOKEN) });
    expect(early.status).toBe(503);
    expect(early.headers.get('retry-after')).toBe('5');
    expect(
      ((await early.json()) as { detail: Array<{ msg: string; code: string }> }).detail[0],
    ).toMatchObject({
      code: 'service_unavailable',
      msg: expect.stringContaining('Service echo has no running replica yet'),
    });
    const earlyUpgrade = await requestUpgrade(proxyUrl('echo', 'ws'), bearer(ADMIN_TOKEN));
    expect(answeredError(earlyUpgrade)).toEqual({ status: 503, code: 'service_unavailable' });
    expect(earlyUpgrade.response.headers['retry-after']).toBe('5');

    const running: Run = await harness.waitForRun('echo', ['running']);
    expect(running.service?.url).toBe('/proxy/services/main/echo/');
    // The job runs but its command waits for the start file: nothing listens on the port yet.
    expect(existsSync(startFile)).toBe(false);
    const refused = await fetch(proxyUrl('echo'), { headers: bearer(ADMIN_TOKEN) });
    expect(refused.status).toBe(502);
    expect(((await refused.json()) as { detail: Array<{ code: string }> }).detail[0]?.code).toBe(
      'bad_gateway',
    );
    expect(answeredError(await requestUpgrade(proxyUrl('echo', 'ws'), bearer(ADMIN_TOKEN)))).toEqual({
      status: 502,
      code: 'bad_gateway',
    });

    writeFileSync(startFile, '');
    const get = await waitForAnswer(
      proxyUrl('echo', 'v1/models?limit=2&name=a%20b'),
      { headers: bearer(ADMIN_TOKEN) },
      200,
    );
    expect(get.status).toBe(200);
    expect(get.headers.get('x-echo-replica')).toBe('yes');
    const echoed = (await get.json()) as Echo;
    expect(echoed).toMatchObject({
      method: 'GET',
      url: '/v1/models?limit=2&name=a%20b',
      body: '',
      // The dstack token is dstack's, not the service's.
      authorization: null,
      forwardedPrefix: '/proxy/services/main/echo',
      forwardedHost: new URL(harness.server.url).host,
    });

    // fetch cannot set Connection: node:http can. A header it names is hop-by-hop, not passed on.
    const hop = await new Promise<Echo>((resolve, reject) => {
      const request = httpRequest(
        proxyUrl('echo'),
        { headers: { ...bearer(ADMIN_TOKEN), connection: 'keep-alive, x-hop', 'x-hop': 'dropped' } },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            text += chunk;
          });
          response.on('end', () => resolve(JSON.parse(text) as Echo));
        },
      );
      request.on('error', reject);
      request.end();
    });
    expect(hop.hop).toBeNull();

    // A streamed upload: the body reaches the replica whole, without the proxy holding it.
    const chunks = ['{"prompt":', '"hello"', '}'];
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
        controller.close();
      },
    });
    const post = await fetch(proxyUrl('echo', 'v1/chat/completions'), {
      method: 'POST',
      headers: { ...bearer(ADMIN_TOKEN), 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(post.status).toBe(200);
    expect((await post.json()) as Echo).toMatchObject({
      method: 'POST',
      url: '/v1/chat/completions',
      body: '{"prompt":"hello"}',
    });

    // The answer streams: its first part arrives while the replica has not finished it.
    const streamed = await fetch(proxyUrl('echo', 'stream'), { headers: bearer(ADMIN_TOKEN) });
    const reader = (streamed.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('first;');
    const release = await fetch(proxyUrl('echo', 'release'), { headers: bearer(ADMIN_TOKEN) });
    expect(await release.text()).toBe('released');
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      rest += new TextDecoder().decode(chunk.value);
    }
    expect(rest).toBe('last');

    // The service root without a trailing slash is the replica's `/`.
    const root = await fetch(`${harness.server.url}/proxy/services/main/echo`, {
      headers: bearer(ADMIN_TOKEN),
    });
    expect(((await root.json()) as Echo).url).toBe('/');
  });

  it("relays a replica's answer given before the body is whole, and lets the client finish its upload", async () => {
    // Past what the sockets' buffers hold: the client can finish only if the proxy goes on reading.
    const size = 32 * 1024 * 1024;
    const answer = await postLargeBody(proxyUrl('echo', 'early'), bearer(ADMIN_TOKEN), {
      head: '',
      filler: Buffer.alloc(1024 * 1024, 'x'),
      tail: '',
      size,
    });
    expect(answer.status).toBe(200);
    expect(answer.text).toBe('early');
    expect(answer.writtenWhenAnswered).toBeLessThan(size);
  });

  it("forwards WebSocket upgrades: the replica's 101, bytes both ways, the close", async () => {
    const closedTunnels = async () =>
      Number(
        await (await fetch(proxyUrl('echo', 'tunnels-closed'), { headers: bearer(ADMIN_TOKEN) })).text(),
      );
    const closedBefore = await closedTunnels();

    const upgraded = await requestUpgrade(proxyUrl('echo', 'ws?room=1'), bearer(ADMIN_TOKEN));
    if (upgraded.kind !== 'switched') {
      throw new Error(`not switched: ${upgraded.response.statusCode} ${upgraded.body}`);
    }
    expect(upgraded.response.statusCode).toBe(101);
    expect(upgraded.response.headers).toMatchObject({
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-accept': WEBSOCKET_ACCEPT,
      'x-echo-url': '/ws?room=1',
      // The dstack token is dstack's, not the service's.
      'x-echo-authorization': 'none',
      'x-echo-prefix': '/proxy/services/main/echo',
    });
    upgraded.socket.write('hello');
    expect(await receiveUntil(upgraded.socket, 'hello', upgraded.head)).toBe('hello');
    upgraded.socket.write(' again');
    expect(await receiveUntil(upgraded.socket, ' again')).toBe(' again');

    // The client leaving ends the replica's side too.
    upgraded.socket.destroy();
    await expect.poll(closedTunnels, { timeout: 10_000 }).toBe(closedBefore + 1);

    // Bytes sent with the handshake, before any answer, reach the replica and come back after the 101.
    const { hostname, port } = new URL(harness.server.url);
    const raw = connect(Number(port), hostname);
    try {
      raw.write(
        [
          'GET /proxy/services/main/echo/ws HTTP/1.1',
          `Host: ${hostname}`,
          `Authorization: Bearer ${ADMIN_TOKEN}`,
          'Connection: Upgrade',
          'Upgrade: websocket',
          `Sec-WebSocket-Key: ${WEBSOCKET_KEY}`,
          'Sec-WebSocket-Version: 13',
          '',
          'early bytes',
        ].join('\r\n'),
      );
      const received = await receiveUntil(raw, '\r\n\r\nearly bytes');
      expect(received).toMatch(/^HTTP\/1\.1 101 Switching Protocols\r\n/);
      expect(received.endsWith('\r\n\r\nearly bytes')).toBe(true);
    } finally {
      raw.destroy();
    }

    // A replica that does not switch has its answer relayed as it is.
    const refused = await requestUpgrade(proxyUrl('echo', 'refuse'), bearer(ADMIN_TOKEN));
    if (refused.kind !== 'answered') throw new Error('The refusing replica switched protocols');
    expect(refused.response.statusCode).toBe(426);
    expect(refused.response.headers['x-echo-replica']).toBe('yes');
    expect(refused.body).toBe('use /ws instead');
  });

  it('asks for a token of a project member unless the service says auth: false', async () => {
    const noToken = await fetch(proxyUrl('echo'));
    expect(noToken.status).toBe(403);
    const badToken = await fetch(proxyUrl('echo'), { headers: bearer('not-a-token') });
    expect(badToken.status).toBe(403);
    const outsider = await fetch(proxyUrl('echo'), { headers: bearer(outsiderToken) });
    expect(outsider.status).toBe(403);

    const port = await findFreePort();
    await applyTask(harness, service('open-echo', port, echoServiceCommand(port), { auth: false }));
    await harness.waitForRun('open-echo', ['running']);
    const open = await waitForAnswer(proxyUrl('open-echo', 'hi'), {}, 200);
    expect(open.status).toBe(200);
    expect(((await open.json()) as Echo).url).toBe('/hi');
    // Without dstack auth, the service does its own: the header is the client's to send.
    const ownAuth = await fetch(proxyUrl('open-echo'), { headers: { authorization: 'Bearer app-key' } });
    expect(((await ownAuth.json()) as Echo).authorization).toBe('Bearer app-key');

    // Upgrades pass the same checks.
    expect(answeredError(await requestUpgrade(proxyUrl('echo', 'ws')))).toEqual({
      status: 403,
      code: 'not_authenticated',
    });
    expect(answeredError(await requestUpgrade(proxyUrl('echo', 'ws'), bearer(outsiderToken)))).toEqual({
      status: 403,
      code: 'forbidden',
    });
    const openUpgrade = await requestUpgrade(proxyUrl('open-echo', 'ws'), {
      authorization: 'Bearer app-key',
    });
    if (openUpgrade.kind !== 'switched') throw new Error(`not switched: ${openUpgrade.response.statusCode}`);
    openUpgrade.socket.destroy();
    expect(openUpgrade.response.headers['x-echo-authorization']).toBe('Bearer app-key');
  });

  it('answers 404 for unknown runs, runs that are not services, and stopped services', async () => {
    expect((await fetch(proxyUrl('no-such-run'), { headers: bearer(ADMIN_TOKEN) })).status).toBe(404);
    expect(answeredError(await requestUpgrade(proxyUrl('no-such-run', 'ws'), bearer(ADMIN_TOKEN)))).toEqual({
      status: 404,
      code: 'resource_not_exists',
    });
    // Strangers learn nothing: no token is a 403 whether or not the run exists.
    expect((await fetch(proxyUrl('no-such-run'))).status).toBe(403);
    expect(
      (await fetch(`${harness.server.url}/proxy/services/nope/echo/`, { headers: bearer(ADMIN_TOKEN) }))
        .status,
    ).toBe(404);

    await applyTask(harness, {
      type: 'task',
      name: 'plain-task',
      commands: ['true'],
      resources: HOST_RESOURCES,
    });
    const task = await harness.waitForRun('plain-task', ['done', 'failed', 'terminated']);
    expect(task.service ?? null).toBeNull();
    expect((await fetch(proxyUrl('plain-task'), { headers: bearer(ADMIN_TOKEN) })).status).toBe(404);

    for (const name of ['echo', 'open-echo']) {
      const stop = await harness.call('/api/project/main/runs/stop', { runs_names: [name], abort: false });
      expect(stop.status).toBe(200);
      await harness.waitForRun(name, ['terminated', 'failed', 'done']);
    }
    const stopped = await fetch(proxyUrl('echo'), { headers: bearer(ADMIN_TOKEN) });
    expect(stopped.status).toBe(404);
    expect(((await stopped.json()) as { detail: Array<{ msg: string }> }).detail[0]?.msg).toContain(
      'Service echo is not running',
    );
  });

  it('gives the model endpoint on the run when the service sets model', async () => {
    const applied = await applyTask(
      harness,
      service('llm', await findFreePort(), 'sleep 30', { model: 'org/model-7b', replicas: 1 }),
    );
    expect(applied.service).toEqual({
      url: '/proxy/services/main/llm/',
      model: { name: 'org/model-7b', base_url: '/proxy/services/main/llm/v1', type: 'chat' },
      options: { openai: { model: { type: 'chat', name: 'org/model-7b', format: 'openai', prefix: '/v1' } } },
    });
    await harness.call('/api/project/main/runs/stop', { runs_names: ['llm'], abort: true });
    await harness.waitForRun('llm', ['terminated', 'failed', 'done']);
  });
});
