/**
 * Large request bodies for the model endpoint's tests: a JSON body of any size built from a
 * head, a repeated filler and a tail (never whole in the test's memory), posted chunk by chunk
 * with a note of how much had been handed to the connection when the answer came. An answer
 * that comes before the last chunk was handed over was given before the body was read whole.
 */
import { createHash } from 'node:crypto';
import { connect, type Socket } from 'node:net';

/** A body of `head`, then `filler` repeated up to `size` bytes in all, then `tail`. */
export interface LargeBody {
  head: string;
  filler: Buffer;
  tail: string;
  size: number;
}

/**
 * An OpenAI request body of `size` bytes, `model` first or last (OpenAI's Python client sends
 * it after `messages` and `input`), its bulk one long string (ASCII, escaped quotes, two- and
 * three-byte characters, cut across chunks): a chat's `messages` or an embeddings `input`.
 */
export function openAiBody(
  model: string,
  size: number,
  options: { modelAt: 'first' | 'last'; endpoint: 'chat' | 'embeddings' },
): LargeBody {
  const modelField = `"model":${JSON.stringify(model)}`;
  const [open, close] =
    options.endpoint === 'chat' ? ['"messages":[{"role":"user","content":"', '"}]'] : ['"input":"', '"'];
  const first = options.modelAt === 'first';
  return {
    head: `{${first ? `${modelField},` : ''}${open}`,
    filler: Buffer.from('é✓ a model: \\"x\\" '.repeat(50_000)),
    tail: `${close}${first ? '' : `,${modelField}`}}`,
    size,
  };
}

/** The body's chunks in order: about `filler` at a time. */
export function* bodyChunks(body: LargeBody): Generator<Buffer> {
  const head = Buffer.from(body.head);
  const tail = Buffer.from(body.tail);
  yield head;
  let left = body.size - head.length - tail.length;
  if (left < 0) throw new Error(`a body of ${body.size} bytes cannot hold its head and tail`);
  while (left > 0) {
    const piece = left >= body.filler.length ? body.filler : body.filler.subarray(0, left);
    yield piece;
    left -= piece.length;
  }
  yield tail;
}

/** The SHA-256 of the body, in hex, as a replica would compute it over what it received. */
export function bodySha256(body: LargeBody): string {
  const hash = createHash('sha256');
  for (const chunk of bodyChunks(body)) hash.update(chunk);
  return hash.digest('hex');
}

export interface LargePostAnswer {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  text: string;
  /** Bytes of the body handed to the connection when the answer's head arrived. */
  writtenWhenAnswered: number;
}

/** Resolves once `socket` takes more (or is closed). */
function drained(socket: Socket): Promise<void> {
  return new Promise((next) => {
    const done = () => {
      socket.off('drain', done);
      socket.off('close', done);
      next();
    };
    socket.on('drain', done);
    socket.on('close', done);
  });
}

/** A chunked body's bytes once its last chunk has come, else null. */
function dechunk(bytes: Buffer): Buffer | null {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', at);
    if (lineEnd === -1) return null;
    const size = Number.parseInt(bytes.subarray(at, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size)) throw new Error('a malformed chunked answer');
    if (size === 0) return Buffer.concat(parts);
    const start = lineEnd + 2;
    if (bytes.length < start + size + 2) return null;
    parts.push(bytes.subarray(start, start + size));
    at = start + size + 2;
  }
}

/** The answer in `bytes` once it is whole (its head, and its body by length or chunks), else null. */
function parseAnswer(bytes: Buffer, writtenWhenAnswered: number): LargePostAnswer | null {
  const headEnd = bytes.indexOf('\r\n\r\n');
  if (headEnd === -1) return null;
  const [statusLine = '', ...lines] = bytes.subarray(0, headEnd).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = bytes.subarray(headEnd + 4);
  let body: Buffer | null;
  if (headers['transfer-encoding'] === 'chunked') body = dechunk(rest);
  else {
    const length = Number(headers['content-length']);
    if (!Number.isFinite(length)) throw new Error(`an answer without a length: ${statusLine}`);
    body = rest.length < length ? null : rest.subarray(0, length);
  }
  if (body === null) return null;
  return {
    status: Number(statusLine.split(' ')[1]),
    headers,
    text: body.toString('utf8'),
    writtenWhenAnswered,
  };
}

/**
 * POSTs `body` to `url` with a declared length, chunk by chunk on a plain socket, waiting for
 * the connection to take each (backpressure). The whole body is sent even after an early
 * answer, as many clients do (Node's own client stops feeding a body once its answer is
 * complete); an early answer must not leave the connection stuck. Resolves once both the
 * answer and the upload are done, or once the answer is whole if the server closed the
 * connection mid-upload.
 */
export function postLargeBody(
  url: string,
  headers: Record<string, string>,
  body: LargeBody,
): Promise<LargePostAnswer> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(target.port), target.hostname);
    let written = 0;
    let writtenWhenAnswered: number | null = null;
    let received = Buffer.alloc(0);
    let answer: LargePostAnswer | null = null;
    let uploaded = false;
    const finish = () => {
      if (answer && uploaded) {
        socket.end();
        resolve(answer);
      }
    };
    socket.on('data', (chunk: Buffer) => {
      writtenWhenAnswered ??= written;
      received = Buffer.concat([received, chunk]);
      try {
        answer ??= parseAnswer(received, writtenWhenAnswered);
      } catch (error) {
        socket.destroy();
        reject(error);
        return;
      }
      finish();
    });
    socket.on('error', (error) => (answer ? resolve(answer) : reject(error)));
    socket.on('close', () =>
      answer ? resolve(answer) : reject(new Error(`${url} closed without an answer`)),
    );
    const head = [
      `POST ${target.pathname}${target.search} HTTP/1.1`,
      `host: ${target.host}`,
      'content-type: application/json',
      `content-length: ${body.size}`,
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ].join('\r\n');
    const upload = async () => {
      socket.write(`${head}\r\n\r\n`);
      for (const chunk of bodyChunks(body)) {
        if (socket.destroyed) return;
        const accepted = socket.write(chunk);
        written += chunk.length;
        if (!accepted) await drained(socket);
      }
      uploaded = true;
      finish();
    };
    socket.once('connect', () => {
      upload().catch(reject);
    });
  });
}
