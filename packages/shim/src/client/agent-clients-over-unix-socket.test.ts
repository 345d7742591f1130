import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunnerClient, type RunnerServer, startRunner } from '@dstack/runner';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ShimServer, startShim } from '../server/shim-server.js';
import { ShimClient } from './shim-client.js';

// dstack's server reaches the agents through Unix sockets that `ssh -L` forwards to the agents'
// ports; a socket that pipes to the TCP port plays the part of that forward here.
function forwardUnixSocket(socketPath: string, port: number): Promise<Server> {
  const forwarder = createServer((incoming) => {
    const outgoing = createConnection({ host: '127.0.0.1', port });
    incoming.pipe(outgoing).pipe(incoming);
    incoming.on('error', () => outgoing.destroy());
    outgoing.on('error', () => incoming.destroy());
  });
  return new Promise((resolve) => forwarder.listen(socketPath, () => resolve(forwarder)));
}

let directory: string;
let runner: RunnerServer;
let shim: ShimServer;
const forwarders: Server[] = [];
const agents: Agent[] = [];

beforeEach(async () => {
  directory = mkdtempSync(join(tmpdir(), 'dstack-agent-sockets-'));
  runner = await startRunner({ port: 0, homeDir: join(directory, 'runner') });
  shim = await startShim({ port: 0, homeDir: join(directory, 'shim') });
});

afterEach(async () => {
  await Promise.all(agents.splice(0).map((agent) => agent.close()));
  await Promise.all(
    forwarders.splice(0).map((forwarder) => new Promise((resolve) => forwarder.close(resolve))),
  );
  forwarders.length = 0;
  await runner.close();
  await shim.close();
  rmSync(directory, { recursive: true, force: true });
});

async function socketAgent(name: string, port: number): Promise<Agent> {
  const socketPath = join(directory, name);
  forwarders.push(await forwardUnixSocket(socketPath, port));
  const agent = new Agent({ connect: { socketPath } });
  agents.push(agent);
  return agent;
}

describe('agent clients over a forwarded Unix socket', () => {
  it('reach the runner with undici’s fetch and a socket dispatcher', async () => {
    const dispatcher = await socketAgent('runner.sock', runner.port);
    // The host in the URL is ignored: the dispatcher connects to the socket.
    const client = new RunnerClient('http://runner', { fetch: undiciFetch as typeof fetch, dispatcher });
    expect(await client.healthcheck()).toMatchObject({ service: 'dstack-runner' });
    expect(await client.pull(0)).toMatchObject({ job_states: [], has_more: false });
  });

  it('reach the shim with a socket dispatcher', async () => {
    const dispatcher = await socketAgent('shim.sock', shim.port);
    const client = new ShimClient('http://shim', { dispatcher });
    expect(await client.healthcheck()).toMatchObject({ service: 'dstack-shim' });
    expect(await client.listTasks()).toEqual([]);
  });
});
