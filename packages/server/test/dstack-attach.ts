/**
 * What dstack's `Run.attach()` and attached logs do, for the replay test: log in to the job at
 * the SSH proxy its `job_connection_info` names, as `{upstream_id}_root` with the user's own key,
 * run a command there, and read `/logs_ws` through a forward to the runner's port 10999 (dstack's
 * client opens `ssh -L` and a WebSocket on it) until the runner closes it.
 */
import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import ssh2, { type Client } from 'ssh2';

export interface AttachTarget {
  hostname: string;
  port: number;
  upstreamId: string;
  privateKey: string;
}

function connect(target: AttachTarget): Promise<Client> {
  const client = new ssh2.Client();
  return new Promise((resolve, reject) => {
    client.once('ready', () => resolve(client));
    client.once('error', reject);
    client.connect({
      host: target.hostname,
      port: target.port,
      username: `${target.upstreamId}_root`,
      privateKey: target.privateKey,
      readyTimeout: 20_000,
    });
  });
}

function execOutput(client: Client, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    client.exec(command, (error, channel) => {
      if (error) return reject(error);
      let output = '';
      channel.on('data', (chunk: Buffer) => {
        output += chunk.toString();
      });
      channel.stderr.resume();
      channel.once('close', () => resolve(output));
    });
  });
}

/** Reads a WebSocket's binary messages until its close frame (server frames: unmasked). */
function readWebSocketMessages(stream: Duplex): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    let upgraded = false;
    const messages: Buffer[] = [];
    let closed = false;
    stream.on('error', reject);
    // A stream that ends before the runner's close frame lost the job's last output.
    stream.once('close', () => {
      if (!closed) {
        reject(new Error(`/logs_ws ended without a close frame after ${messages.length} message(s)`));
      }
    });
    stream.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (!upgraded) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end === -1) return;
        const head = buffered.subarray(0, end).toString();
        if (!head.startsWith('HTTP/1.1 101')) return reject(new Error(`no WebSocket upgrade: ${head}`));
        upgraded = true;
        buffered = buffered.subarray(end + 4);
      }
      for (;;) {
        if (buffered.length < 2) return;
        const opcode = buffered[0]! & 0x0f;
        let length = buffered[1]! & 0x7f;
        let offset = 2;
        if (length === 126) {
          if (buffered.length < 4) return;
          length = buffered.readUInt16BE(2);
          offset = 4;
        } else if (length === 127) {
          if (buffered.length < 10) return;
          length = Number(buffered.readBigUInt64BE(2));
          offset = 10;
        }
        if (buffered.length < offset + length) return;
        const payload = buffered.subarray(offset, offset + length);
        buffered = buffered.subarray(offset + length);
        if (opcode === 0x8) {
          closed = true;
          stream.end();
          return resolve(messages);
        }
        if (opcode === 0x2 || opcode === 0x1) messages.push(Buffer.from(payload));
      }
    });
    stream.write(
      'GET /logs_ws HTTP/1.1\r\nHost: localhost:10999\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
  });
}

/** `promise`, or an error naming `what` once `ms` have passed: a step that hangs says which. */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`attach: ${what} took over ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Attaches as dstack's client does: the command's output, then the job's whole log. */
export async function attachLikeDstack(
  target: AttachTarget,
  command: string,
): Promise<{ execOutput: string; logText: string }> {
  const client = await connect(target);
  try {
    const output = await within(30_000, `running "${command}"`, execOutput(client, command));
    const stream = await within(
      30_000,
      "forwarding to the runner's port",
      new Promise<Duplex>((resolve, reject) =>
        client.forwardOut('127.0.0.1', 0, 'localhost', 10999, (error, channel) =>
          error ? reject(error) : resolve(channel),
        ),
      ),
    );
    const messages = await within(
      30_000,
      'reading /logs_ws to its close frame',
      readWebSocketMessages(stream),
    );
    return { execOutput: output, logText: Buffer.concat(messages).toString() };
  } finally {
    client.end();
  }
}
