/**
 * One POST to the server with node's own `http`/`https`: a command's requests cost no HTTP library
 * to load (undici alone adds ~16 MiB and ~40 ms of CPU to every command's start). A caller that
 * brings an undici `Dispatcher` (a `MockAgent` in tests) is served by undici, loaded then.
 */
import type { IncomingMessage } from 'node:http';
import type { Dispatcher } from 'undici';

/** An answer whose body is not read yet: iterate it (a stream) or read it whole with `text()`. */
export interface HttpAnswer {
  statusCode: number;
  body: AsyncIterable<Uint8Array> & { text(): Promise<string> };
}

/** A body of one file part (dstack's uploads: the part `file`, named by the file's sha256). */
export interface FilePart {
  filename: string;
  bytes: Uint8Array;
}

export interface HttpPostOptions {
  headers: Record<string, string>;
  /** JSON text, or one file sent as `multipart/form-data`. */
  body: string | FilePart;
  /** Milliseconds until the answer's headers; then the request fails with `HeadersTimeoutError`. */
  headersTimeoutMs: number;
  /** Longest silence while the body streams; then reading it fails. Default: none. */
  bodyTimeoutMs?: number;
  signal?: AbortSignal;
  dispatcher?: Dispatcher;
}

/**
 * No answer's headers within `headersTimeoutMs`. The errors here carry undici's codes, so that
 * `api-errors.ts` reads both paths alike.
 */
export class HeadersTimeoutError extends Error {
  readonly code = 'UND_ERR_HEADERS_TIMEOUT';
  override readonly name = 'HeadersTimeoutError';
}

/** No connection within this long counts as unreachable, as undici's default connect timeout. */
const CONNECT_TIMEOUT_MS = 10_000;

/** The body's silence went past `bodyTimeoutMs`. */
class BodyTimeoutError extends Error {
  readonly code = 'UND_ERR_BODY_TIMEOUT';
  override readonly name = 'BodyTimeoutError';
}

/** A connection not made within `CONNECT_TIMEOUT_MS`: nothing answers at the address. */
class ConnectTimeoutError extends Error {
  readonly code = 'UND_ERR_CONNECT_TIMEOUT';
  override readonly name = 'ConnectTimeoutError';
}

function multipart(part: FilePart): { contentType: string; bytes: Buffer } {
  const boundary = `----dstack${crypto.randomUUID().replaceAll('-', '')}`;
  const head =
    `--${boundary}\r\n` +
    `Content-Disposition: form-data; name="file"; filename="${part.filename.replace(/["\r\n\\]/g, '_')}"\r\n` +
    'Content-Type: application/octet-stream\r\n\r\n';
  return {
    contentType: `multipart/form-data; boundary=${boundary}`,
    bytes: Buffer.concat([Buffer.from(head), part.bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]),
  };
}

async function readText(stream: AsyncIterable<Uint8Array>): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/** POSTs to `url`; resolves with the answer once its headers arrive, whatever its status. */
export async function httpPost(url: string, options: HttpPostOptions): Promise<HttpAnswer> {
  const body = typeof options.body === 'string' ? null : multipart(options.body);
  const headers = body ? { ...options.headers, 'content-type': body.contentType } : options.headers;
  const payload = body ? body.bytes : Buffer.from(options.body as string);
  if (options.dispatcher) return undiciPost(url, options.dispatcher, { ...options, headers }, payload);
  const { request } = url.startsWith('https:') ? await import('node:https') : await import('node:http');
  return new Promise<HttpAnswer>((resolve, reject) => {
    const outgoing = request(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(payload.length) },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const fail = (error: Error) => {
      clearTimeout(headersTimer);
      outgoing.destroy(error);
      reject(error);
    };
    const headersTimer = setTimeout(
      () => fail(new HeadersTimeoutError(`no answer within ${options.headersTimeoutMs} ms`)),
      options.headersTimeoutMs,
    );
    const connectTimer = setTimeout(
      () => fail(new ConnectTimeoutError(`no connection within ${CONNECT_TIMEOUT_MS} ms`)),
      CONNECT_TIMEOUT_MS,
    );
    outgoing.on('socket', (socket) => {
      if (!socket.connecting) clearTimeout(connectTimer);
      else socket.once('connect', () => clearTimeout(connectTimer));
    });
    outgoing.on('error', (error) => {
      clearTimeout(headersTimer);
      clearTimeout(connectTimer);
      reject(error);
    });
    outgoing.on('response', (response: IncomingMessage) => {
      clearTimeout(headersTimer);
      clearTimeout(connectTimer);
      if (options.bodyTimeoutMs !== undefined) {
        response.socket.setTimeout(options.bodyTimeoutMs, () =>
          response.destroy(new BodyTimeoutError(`no data for ${options.bodyTimeoutMs} ms`)),
        );
        response.once('end', () => response.socket?.setTimeout(0));
      }
      resolve({
        statusCode: response.statusCode ?? 0,
        body: Object.assign(response, { text: () => readText(response) }),
      });
    });
    outgoing.end(payload);
  });
}

async function undiciPost(
  url: string,
  dispatcher: Dispatcher,
  options: HttpPostOptions,
  payload: Buffer,
): Promise<HttpAnswer> {
  const { request } = await import('undici');
  const response = await request(url, {
    method: 'POST',
    headers: options.headers,
    body: payload,
    headersTimeout: options.headersTimeoutMs,
    ...(options.bodyTimeoutMs === undefined ? {} : { bodyTimeout: options.bodyTimeoutMs }),
    ...(options.signal ? { signal: options.signal } : {}),
    dispatcher,
  });
  return { statusCode: response.statusCode, body: response.body };
}
