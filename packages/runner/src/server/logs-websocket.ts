/**
 * dstack's `GET /logs_ws`: the job's output as WebSocket binary messages, one per log entry, from
 * the first (or the first at or after `start_time`, RFC 3339) until the job has finished and
 * everything was sent; then a close frame. dstack's clients read it when attached: through their
 * SSH tunnel to the runner's port 10999. A server's side of RFC 6455 only as far as this needs:
 * it sends unmasked binary frames, answers pings and a client's close, and ignores other frames.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RunnerPullResponse } from '@dstack/core/agent-protocol';
import { HttpError, rejectUpgrade } from './http-helpers.js';

/** RFC 6455's GUID, appended to the client's key for `Sec-WebSocket-Accept`. */
const WEBSOCKET_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const OPCODE_BINARY = 0x2;
const OPCODE_CLOSE = 0x8;
const OPCODE_PING = 0x9;
const OPCODE_PONG = 0xa;
/** How often the job's log is looked at for new entries (dstack's runner: 100 ms). */
const POLL_MS = 100;
const FINAL_STATES = new Set(['done', 'failed', 'terminated', 'aborted']);

/** What the stream reads: the job's log and states, as `GET /api/pull` answers. */
export type PullJobEvents = (timestamp: number) => RunnerPullResponse;

/** One frame as the server sends it: FIN set, no mask. */
export function encodeFrame(opcode: number, payload: Buffer): Buffer {
  const length = payload.length;
  let header: Buffer;
  if (length < 126) {
    header = Buffer.from([0x80 | opcode, length]);
  } else if (length < 0x10000) {
    header = Buffer.alloc(4);
    header.writeUInt8(0x80 | opcode, 0);
    header.writeUInt8(126, 1);
    header.writeUInt16BE(length, 2);
  } else {
    header = Buffer.alloc(10);
    header.writeUInt8(0x80 | opcode, 0);
    header.writeUInt8(127, 1);
    header.writeBigUInt64BE(BigInt(length), 2);
  }
  return Buffer.concat([header, payload]);
}

/** Client frames: each complete one is handed to `onFrame` unmasked; an incomplete tail waits. */
class FrameReader {
  private buffered = Buffer.alloc(0);
  constructor(private readonly onFrame: (opcode: number, payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    for (;;) {
      if (this.buffered.length < 2) return;
      const opcode = this.buffered[0]! & 0x0f;
      const masked = (this.buffered[1]! & 0x80) !== 0;
      let length = this.buffered[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (this.buffered.length < 4) return;
        length = this.buffered.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (this.buffered.length < 10) return;
        length = Number(this.buffered.readBigUInt64BE(2));
        offset = 10;
      }
      const maskOffset = offset;
      if (masked) offset += 4;
      if (this.buffered.length < offset + length) return;
      const payload = Buffer.from(this.buffered.subarray(offset, offset + length));
      if (masked) {
        for (let index = 0; index < payload.length; index += 1) {
          payload[index]! ^= this.buffered[maskOffset + (index % 4)]!;
        }
      }
      this.buffered = this.buffered.subarray(offset + length);
      this.onFrame(opcode, payload);
    }
  }
}

/** The `start_time` query parameter as a pull timestamp (ms), 0 when absent. */
function startTimestampOf(request: IncomingMessage): number {
  const value = new URL(request.url ?? '/', 'http://runner').searchParams.get('start_time');
  if (value === null || value === '') return 0;
  const parsed = Date.parse(value);
  if (Number.isNaN(parsed)) {
    throw new HttpError(
      400,
      `invalid query parameter start_time: expected an RFC 3339 date-time, got "${value}"`,
    );
  }
  return parsed;
}

/** Handles the `upgrade` event of `GET /logs_ws`. */
export function serveLogsWebSocket(request: IncomingMessage, socket: Duplex, pull: PullJobEvents): void {
  const key = request.headers['sec-websocket-key'];
  if (request.headers.upgrade?.toLowerCase() !== 'websocket' || typeof key !== 'string') {
    rejectUpgrade(
      socket,
      new HttpError(400, 'GET /logs_ws: expected a WebSocket upgrade with Sec-WebSocket-Key'),
    );
    return;
  }
  let startTimestamp: number;
  try {
    startTimestamp = startTimestampOf(request);
  } catch (error) {
    rejectUpgrade(socket, error as HttpError);
    return;
  }
  const accept = createHash('sha1').update(`${key}${WEBSOCKET_GUID}`).digest('base64');
  socket.write(
    `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
  );
  let timer: NodeJS.Timeout | undefined;
  let open = true;
  const finish = () => {
    if (!open) return;
    open = false;
    clearTimeout(timer);
    socket.end(encodeFrame(OPCODE_CLOSE, Buffer.alloc(0)));
  };
  const reader = new FrameReader((opcode, payload) => {
    if (opcode === OPCODE_PING) socket.write(encodeFrame(OPCODE_PONG, payload));
    else if (opcode === OPCODE_CLOSE) finish();
  });
  socket.on('data', (chunk: Buffer) => reader.push(chunk));
  socket.on('error', () => finish());
  socket.once('close', () => {
    open = false;
    clearTimeout(timer);
  });
  let cursor = 0;
  const sendNew = () => {
    if (!open) return;
    let finished = false;
    for (;;) {
      const page = pull(cursor);
      cursor = page.last_updated;
      for (const entry of page.job_logs) {
        if (entry.timestamp < startTimestamp) continue;
        socket.write(encodeFrame(OPCODE_BINARY, Buffer.from(entry.message, 'base64')));
      }
      if (page.job_states.some((state) => FINAL_STATES.has(state.state))) finished = true;
      if (!page.has_more) break;
    }
    if (finished) finish();
    else timer = setTimeout(sendNew, POLL_MS);
  };
  sendNew();
}
