/**
 * A request to the model endpoint read just far enough to learn its `model`
 * (json-model-field.ts), and the whole body as a stream to send on.
 *
 * Where `model` comes early (OpenAI's Node client, curl examples: `{"model": …, …}`), only the
 * first chunks are read before the request is routed, and the rest streams from the client to
 * the replica. Where it comes late (OpenAI's Python client sends `messages` or `input` first),
 * the body must be read up to it; what was read is held in memory up to
 * `MODEL_REQUEST_MEMORY_BYTES` and written past that to a file in the server directory,
 * unlinked as soon as it is open, so that it disappears with the request (or the process), as
 * nginx in front of dstack's gateway keeps large bodies in its client body temp files. Memory
 * stays bounded per request either way; the body limit bounds the file.
 */
import { randomUUID } from 'node:crypto';
import { type FileHandle, mkdir, open, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { HttpError } from '../http/error-mapping.js';
import { ModelFieldScanner } from './json-model-field.js';

/**
 * The bytes of a request held in memory while looking for its `model`: a socket's read is at
 * most 64 KiB, so this is about one chunk. Past it, what is read goes to a file.
 */
export const MODEL_REQUEST_MEMORY_BYTES = 64 * 1024;

export interface ModelRequestBodyOptions {
  /** The largest body accepted, in bytes: a larger one is refused as soon as it is known to be larger. */
  maxBytes: number;
  /** The error for a body of `bytes`, over `maxBytes`. */
  tooLarge(bytes: number): Error;
  /** Where bodies read past `MODEL_REQUEST_MEMORY_BYTES` are kept while the request lasts. */
  spoolDirectory: string;
}

export interface ModelRequestBody {
  /** The body's top-level `model`. */
  model: string;
  /**
   * The whole body as the client sent it: what was read to find `model`, then the rest of the
   * request as it arrives (the same stream each call). Until it is read, the rest of the
   * request stays unread, for the caller to discard if it refuses the request.
   */
  stream(): Readable;
  /**
   * Closes what the body holds (its file) once the stream, if reading began, has ended; call
   * once the request is answered, sent or not. Never rejects.
   */
  release(): Promise<void>;
}

/** A request's chunks, one at a time, the request paused in between (backpressure to the client). */
function nextChunk(request: IncomingMessage): Promise<Buffer | null> {
  if (request.readableEnded) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const done = () => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onGone);
      request.off('close', onGone);
    };
    const onData = (chunk: Buffer) => {
      request.pause();
      done();
      resolve(chunk);
    };
    const onEnd = () => {
      done();
      resolve(null);
    };
    // A client that leaves mid-body: a 4xx that no one reads, rather than a 500 logged as the server's fault.
    const onGone = () => {
      done();
      reject(
        new HttpError(
          400,
          'The client closed the connection before sending the whole body',
          'incomplete_body',
        ),
      );
    };
    request.on('data', onData);
    request.once('end', onEnd);
    request.once('error', onGone);
    request.once('close', onGone);
    request.resume();
  });
}

/** The part of the body read past the memory budget, in an unlinked file. */
class Spool {
  #written = 0;
  #closed = false;

  private constructor(private readonly handle: FileHandle) {}

  static async create(directory: string): Promise<Spool> {
    await mkdir(directory, { recursive: true, mode: 0o700 });
    const path = join(directory, `model-request-${randomUUID()}`);
    const handle = await open(path, 'wx+', 0o600);
    // The open handle keeps the bytes; nothing is left behind if the server dies mid-request.
    await rm(path, { force: true });
    return new Spool(handle);
  }

  async write(chunk: Buffer): Promise<void> {
    await this.handle.write(chunk, 0, chunk.length, this.#written);
    this.#written += chunk.length;
  }

  read(): Readable {
    return this.handle.createReadStream({ start: 0, end: this.#written - 1, autoClose: false });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.handle.close();
  }
}

/**
 * Reads the request until its body's top-level `model` is found, and answers it with the whole
 * body to stream on. Throws the endpoint's answers: 413 over `maxBytes` (by the declared length
 * before reading anything), 400 for a body without a usable `model`. Once it throws, the unread
 * rest of the request is the caller's to discard.
 */
export async function readModelRequestBody(
  request: IncomingMessage,
  options: ModelRequestBodyOptions,
): Promise<ModelRequestBody> {
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > options.maxBytes) throw options.tooLarge(declared);
  const scanner = new ModelFieldScanner();
  const held: Buffer[] = [];
  let heldBytes = 0;
  let spool: Spool | null = null;
  let size = 0;
  let model: string | null = null;
  try {
    while (model === null) {
      const chunk = await nextChunk(request);
      if (chunk === null) throw scanner.endedError();
      size += chunk.length;
      if (size > options.maxBytes) throw options.tooLarge(size);
      if (spool === null && heldBytes + chunk.length <= MODEL_REQUEST_MEMORY_BYTES) {
        held.push(chunk);
        heldBytes += chunk.length;
      } else {
        spool ??= await Spool.create(options.spoolDirectory);
        await spool.write(chunk);
      }
      model = scanner.push(chunk);
    }
  } catch (error) {
    await spool?.close();
    throw error;
  }
  const found = model;
  let stream: Readable | null = null;
  let started = false;
  async function* chunks(): AsyncGenerator<Buffer> {
    started = true;
    // Handed over one by one, so that each is freed once sent.
    while (held.length > 0) yield held.shift() as Buffer;
    if (spool) yield* spool.read();
    yield* request;
  }
  return {
    model: found,
    stream: () => {
      stream ??= Readable.from(chunks(), { objectMode: false });
      return stream;
    },
    release: async () => {
      // Once started, the stream is read to its end (sent, or dropped after an early answer)
      // or cut with the client: the file stays open for it until then.
      if (stream && started) await finished(stream).catch(() => {});
      // A file that cannot be closed is closed by the runtime when its handle is collected.
      await spool?.close().catch(() => {});
    },
  };
}
