/**
 * The agent clients never wait forever: against a real HTTP server that accepts requests and
 * never answers (or answers a trickle), each call ends at its deadline or when the caller's
 * signal aborts it.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RunnerClient } from '@dstack/runner';
import { afterEach, describe, expect, it } from 'vitest';
import { ShimClient } from './shim-client.js';

const servers: Server[] = [];
const timers: NodeJS.Timeout[] = [];

afterEach(async () => {
  for (const timer of timers.splice(0)) clearInterval(timer);
  await Promise.all(
    servers.splice(0).map((server) => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    }),
  );
});

/** An agent that takes each request and answers with `respond` (nothing by default: it hangs). */
async function agent(respond: (response: ServerResponse) => void = () => {}): Promise<string> {
  const server = createServer((_request, response) => respond(response));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Sends the headers, then a byte every 20 ms, never the end: no pause is long enough for bodyTimeout. */
function trickle(response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'application/json' });
  response.write('{');
  timers.push(setInterval(() => response.write(' '), 20));
}

describe('ShimClient', () => {
  it('gives up on a shim that never answers at its deadline', async () => {
    const client = new ShimClient(await agent(), { timeoutMs: 100 });
    await expect(client.healthcheck()).rejects.toThrow();
  });

  it('gives up on an answer that trickles in forever at its deadline', async () => {
    const client = new ShimClient(await agent(trickle), { timeoutMs: 200 });
    await expect(client.healthcheck()).rejects.toThrow(/abort|timeout/i);
  });

  it("stops waiting when the caller's signal aborts", async () => {
    const caller = new AbortController();
    const client = new ShimClient(await agent(), { timeoutMs: 600_000, signal: caller.signal });
    const call = client.getTask('task-1');
    caller.abort(new Error('the caller gave up'));
    await expect(call).rejects.toThrow();
  });
});

describe('RunnerClient', () => {
  it('gives up on a runner that never answers at its deadline', async () => {
    const client = new RunnerClient(await agent(), { timeoutMs: 100 });
    await expect(client.pull(0)).rejects.toThrow();
  });

  it('gives up on an answer that trickles in forever at its deadline', async () => {
    const client = new RunnerClient(await agent(trickle), { timeoutMs: 200 });
    await expect(client.pull(0)).rejects.toThrow(/abort|timeout/i);
  });

  it("stops waiting when the caller's signal aborts", async () => {
    const caller = new AbortController();
    const client = new RunnerClient(await agent(), { timeoutMs: 600_000, signal: caller.signal });
    const call = client.run();
    caller.abort(new Error('the caller gave up'));
    await expect(call).rejects.toThrow();
  });
});
