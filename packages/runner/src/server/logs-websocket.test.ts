/**
 * dstack's `GET /logs_ws`, as dstack's clients read it when attached: the job's whole output as
 * binary messages, then a close frame once the job has finished. On the TCP port the runner's
 * token is required; through an SSH forward to the runner's own port (dstack's 10999) the SSH key
 * was the proof.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { DSTACK_RUNNER_HTTP_PORT } from '@dstack/core/agent-protocol';
import ssh2, { type Client } from 'ssh2';
import { afterEach, describe, expect, it } from 'vitest';
import { RunnerClient } from '../client/runner-client.js';
import { submitBody } from '../testing/runner-job.test.helpers.js';
import { generateClientKey, openSshUpgrade } from '../testing/ssh.test.helpers.js';
import { encodeFrame } from './logs-websocket.js';
import { type RunnerServer, startRunner } from './runner-server.js';

const TOKEN = 'logs-ws-token';
const key = generateClientKey('logs');
let homeDir: string | undefined;
let runner: RunnerServer | undefined;
let ssh: Client | undefined;

afterEach(async () => {
  ssh?.end();
  await runner?.close();
  if (homeDir) rmSync(homeDir, { recursive: true, force: true });
});

/** The handshake's status line, then every binary message until the close frame. */
function readLogsWebSocket(stream: Duplex, headers: string): Promise<{ status: string; text: string }> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    let status: string | undefined;
    const messages: Buffer[] = [];
    stream.on('error', reject);
    stream.on('close', () => resolve({ status: status ?? '', text: Buffer.concat(messages).toString() }));
    stream.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (status === undefined) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end === -1) return;
        status = buffered.subarray(0, buffered.indexOf('\r\n')).toString();
        buffered = buffered.subarray(end + 4);
        if (!status.includes(' 101 ')) return resolve({ status, text: '' });
      }
      while (buffered.length >= 2 && buffered.length >= 2 + (buffered[1]! & 0x7f)) {
        const opcode = buffered[0]! & 0x0f;
        const length = buffered[1]! & 0x7f;
        const payload = buffered.subarray(2, 2 + length);
        buffered = buffered.subarray(2 + length);
        if (opcode === 0x8) {
          stream.end();
          return resolve({ status, text: Buffer.concat(messages).toString() });
        }
        messages.push(Buffer.from(payload));
      }
    });
    stream.write(
      `GET /logs_ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n${headers}` +
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
  });
}

async function startJob(commands: string[]): Promise<RunnerServer> {
  homeDir = mkdtempSync(join(tmpdir(), 'dstack-runner-logs-ws-'));
  runner = await startRunner({ port: 0, homeDir, token: TOKEN });
  const client = new RunnerClient(runner.url, { token: TOKEN });
  const body = submitBody(commands);
  body.run.run_spec = { ssh_key_pub: key.publicLine };
  await client.submit(body);
  await client.run();
  return runner;
}

describe('GET /logs_ws', () => {
  it('streams the whole output and closes once the job is done; the TCP port needs the token', async () => {
    const started = await startJob(['echo one; sleep 1; echo two']);
    const refused = await readLogsWebSocket(connect(started.port, '127.0.0.1'), '');
    expect(refused.status).toBe('HTTP/1.1 401 Unauthorized');
    const streamed = await readLogsWebSocket(
      connect(started.port, '127.0.0.1'),
      `Authorization: Bearer ${TOKEN}\r\n`,
    );
    expect(streamed).toEqual({ status: 'HTTP/1.1 101 Switching Protocols', text: 'one\ntwo\n' });
  });

  it("is served without the token through an SSH forward to dstack's port 10999", async () => {
    const started = await startJob(['echo over-ssh; sleep 1']);
    const socket = await openSshUpgrade(started.url, 'ssh', { authorization: `Bearer ${TOKEN}` });
    ssh = await new Promise<Client>((resolve, reject) => {
      const client = new ssh2.Client();
      client.once('ready', () => resolve(client));
      client.once('error', reject);
      client.connect({ sock: socket, username: 'root', privateKey: key.privateKey });
    });
    const channel = await new Promise<Duplex>((resolve, reject) =>
      ssh!.forwardOut('127.0.0.1', 0, 'localhost', DSTACK_RUNNER_HTTP_PORT, (error, stream) =>
        error ? reject(error) : resolve(stream),
      ),
    );
    expect(await readLogsWebSocket(channel, '')).toEqual({
      status: 'HTTP/1.1 101 Switching Protocols',
      text: 'over-ssh\n',
    });
  });
});

describe('encodeFrame', () => {
  it('writes the length in 7 bits, 16 bits or 64 bits', () => {
    expect(encodeFrame(0x2, Buffer.alloc(5)).subarray(0, 2)).toEqual(Buffer.from([0x82, 5]));
    expect(encodeFrame(0x2, Buffer.alloc(300)).subarray(0, 4)).toEqual(Buffer.from([0x82, 126, 1, 44]));
    expect(encodeFrame(0x2, Buffer.alloc(70_000)).subarray(0, 10)).toEqual(
      Buffer.from([0x82, 127, 0, 0, 0, 0, 0, 1, 0x11, 0x70]),
    );
  });
});
