/**
 * The runner client makes its calls with undici's `request` (a fraction of `fetch`'s CPU, which
 * matters to a server pulling hundreds of runners), through an undici dispatcher when given one,
 * and still through a `fetch` when the caller passes its own.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { AgentApiError } from './agent-api-error.js';
import { RunnerClient } from './runner-client.js';

let directory: string;
let socketPath: string;
let server: Server;
let requests: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }>;

beforeEach(async () => {
  directory = mkdtempSync(join(tmpdir(), 'dstack-runner-client-'));
  socketPath = join(directory, 'runner.sock');
  requests = [];
  // A runner reached through a forwarded Unix socket, as through an SSH tunnel.
  server = createServer(async (request, response) => {
    let body = '';
    for await (const chunk of request) body += chunk;
    requests.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body });
    if (request.url === '/api/healthcheck') {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ service: 'dstack-runner', version: '0.0.0' }));
    } else if (request.url === '/api/stop') {
      response.statusCode = 409;
      response.end('already stopped');
    } else {
      response.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
});

afterEach(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(directory, { recursive: true, force: true });
});

it('calls the runner with undici request, through a dispatcher, not the global fetch', async () => {
  const dispatcher = new Agent({ connect: { socketPath } });
  const globalFetch = vi.spyOn(globalThis, 'fetch');
  try {
    const client = new RunnerClient('http://runner/', { dispatcher, token: 'secret' });
    expect(await client.healthcheck()).toEqual({ service: 'dstack-runner', version: '0.0.0' });
    await client.submit({ run_name: 'x' } as never);
    const stopped = client.stop();
    await expect(stopped).rejects.toBeInstanceOf(AgentApiError);
    await expect(stopped).rejects.toMatchObject({ statusCode: 409, body: 'already stopped' });
    expect(globalFetch).not.toHaveBeenCalled();
  } finally {
    globalFetch.mockRestore();
    await dispatcher.close();
  }
  expect(requests.map(({ method, url }) => `${method} ${url}`)).toEqual([
    'GET /api/healthcheck',
    'POST /api/submit',
    'POST /api/stop',
  ]);
  expect(requests[0]?.headers.authorization).toBe('Bearer secret');
  expect(requests[1]?.headers['content-type']).toBe('application/json');
  expect(requests[1]?.body).toBe('{"run_name":"x"}');
});

it('calls the runner through the fetch the caller passes', async () => {
  const dispatcher = new Agent({ connect: { socketPath } });
  const urls: string[] = [];
  try {
    const { fetch } = await import('undici');
    const client = new RunnerClient('http://runner', {
      dispatcher,
      fetch: (input, init) => {
        urls.push(input);
        return fetch(input, init as never) as unknown as Promise<Response>;
      },
    });
    expect(await client.healthcheck()).toEqual({ service: 'dstack-runner', version: '0.0.0' });
  } finally {
    await dispatcher.close();
  }
  expect(urls).toEqual(['http://runner/api/healthcheck']);
});

it('calls one runner over one connection, call after call', async () => {
  const tcp = createServer(async (request, response) => {
    request.resume();
    request.on('end', () => response.end());
  });
  let connections = 0;
  tcp.on('connection', () => {
    connections++;
  });
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = tcp.address() as { port: number };
    const client = new RunnerClient(`http://127.0.0.1:${port}`);
    await client.submit({} as never);
    await client.uploadCode(new Uint8Array(0));
    await client.stop();
    expect(connections).toBe(1);
  } finally {
    tcp.closeAllConnections();
    await new Promise((resolve) => tcp.close(resolve));
  }
});
