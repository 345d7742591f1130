/**
 * The server's service proxy, and the probes of a service, reach the service's replica and
 * nothing else whatever the request target names. A real server (SQLite) with the local backend
 * runs an `auth: false` service that answers every request with the target it received, and whose
 * probe's `url` names another listener (`//127.0.0.1:{port}/…`). Raw requests written on a TCP
 * socket whose target names that listener (absolute-form, `//host:port/proxy/services/…`, in an
 * upgrade too) are answered 400; `/proxy/services/main/{run}//host:port/…` is the replica's path
 * `//host:port/…`, asked of the replica. The listener counts every connection it gets: none.
 */
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  applyNodeService,
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
} from './server-harness.js';

// A real service process starts here; nothing is timed, the limits only catch hangs.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const ORIGIN_FORM_REFUSAL = 'must be a path that starts with a single "/"';

/** The replica: answers every request, and every upgrade, with the target it received. */
const TARGET_ECHO_JS = String.raw`
const server = require('http').createServer((request, response) => {
  response.setHeader('content-type', 'application/json');
  response.end(JSON.stringify({ answeredBy: 'replica', url: request.url }));
});
server.on('upgrade', (request, socket) => {
  socket.end('HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nx-echo-url: ' + request.url + '\r\n\r\n');
});
server.listen(Number(process.argv[2]), '127.0.0.1');
`;

/** Writes `head` on a new connection to the server and reads until it closes the connection. */
function rawExchange(url: string, head: string): Promise<{ status: number; head: string; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(`${head}\r\n\r\n`));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const headEnd = text.indexOf('\r\n\r\n');
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0),
        head: text.slice(0, headEnd),
        body: text.slice(headEnd + 4),
      });
    });
  });
}

describe('the service proxy reaches only the replica', () => {
  const temp = makeTempDir();
  let harness: HarnessServer;
  let bait: { server: Server; port: number; connections: number };

  beforeAll(async () => {
    const server = createServer((_request, response) => response.end('bait'));
    bait = { server, port: 0, connections: 0 };
    server.on('connection', () => {
      bait.connections += 1;
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    bait.port = (server.address() as AddressInfo).port;
    harness = await startHarnessServer({ dir: temp.dir, config: localBackendConfig(temp.dir) });
    // Served once its probe passed: the service has a ready replica.
    await applyNodeService(harness, {
      dir: temp.dir,
      name: 'targets',
      script: TARGET_ECHO_JS,
      readyPath: 'ready',
      fields: {
        auth: false,
        // A probe whose path, resolved as a URL against the replica's, would name the bait.
        probes: [{ type: 'http', url: `//127.0.0.1:${bait.port}/health`, interval: 1, timeout: 5 }],
      },
    });
  });

  afterAll(async () => {
    await harness?.terminateFleetsAndClose();
    bait?.server.close();
    temp.remove();
  });

  it('probes the replica with the probe path, connecting nowhere else', async () => {
    expect(bait.connections).toBe(0);
  });

  it('answers 400 to a target that is not a path, connecting nowhere', async () => {
    const host = new URL(harness.server.url).host;
    for (const target of [
      `http://127.0.0.1:${bait.port}/proxy/services/main/targets/x`,
      `//127.0.0.1:${bait.port}/proxy/services/main/targets/x`,
    ]) {
      const answer = await rawExchange(
        harness.server.url,
        `GET ${target} HTTP/1.1\r\nhost: ${host}\r\nconnection: close`,
      );
      expect(answer.status, target).toBe(400);
      expect(JSON.parse(answer.body).detail[0]).toMatchObject({
        code: 'invalid_request',
        msg: expect.stringContaining(ORIGIN_FORM_REFUSAL),
      });
      const upgrade = await rawExchange(
        harness.server.url,
        `GET ${target} HTTP/1.1\r\nhost: ${host}\r\nconnection: Upgrade\r\nupgrade: websocket`,
      );
      expect(upgrade.status, `upgrade ${target}`).toBe(400);
    }
    expect(bait.connections).toBe(0);
  });

  it('asks the replica for a path that starts with a host, as a path', async () => {
    const host = new URL(harness.server.url).host;
    const rest = `//127.0.0.1:${bait.port}/x?next=//elsewhere`;
    const answer = await rawExchange(
      harness.server.url,
      `GET /proxy/services/main/targets${rest} HTTP/1.1\r\nhost: ${host}\r\nconnection: close`,
    );
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ answeredBy: 'replica', url: rest });
    const upgrade = await rawExchange(
      harness.server.url,
      `GET /proxy/services/main/targets${rest} HTTP/1.1\r\nhost: ${host}\r\nconnection: Upgrade\r\nupgrade: websocket`,
    );
    expect(upgrade.status).toBe(101);
    expect(upgrade.head).toContain(`x-echo-url: ${rest}`);
    expect(bait.connections).toBe(0);
  });
});
