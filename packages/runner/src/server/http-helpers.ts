import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { z } from 'zod';

/** An error that maps to an HTTP status; its message is sent to the client. */
export class HttpError extends Error {
  override readonly name = 'HttpError';

  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** Largest JSON body accepted: a job spec with its secrets, or a task config with its keys and mounts, is far smaller. */
const MAX_JSON_BODY_BYTES = 16 * 1024 * 1024;

export function sendJson(response: ServerResponse, statusCode: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(statusCode, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

export function sendError(response: ServerResponse, error: unknown): void {
  if (error instanceof HttpError) {
    sendJson(response, error.statusCode, { detail: error.message });
  } else {
    sendJson(response, 500, { detail: error instanceof Error ? error.message : String(error) });
  }
}

/**
 * Answers an upgrade request that is refused: a JSON error like {@link sendError}'s, written on
 * the raw socket (an upgrade request has no response object), then the socket is closed.
 */
export function rejectUpgrade(socket: Duplex, error: HttpError): void {
  const body = JSON.stringify({ detail: error.message });
  socket.end(
    `HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode] ?? ''}\r\n` +
      'Content-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

async function readBody(request: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      throw new HttpError(413, `request body exceeds ${limit} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** Parses the JSON body with `schema`; a bad body is a 400 whose message names the fields. An empty body is `{}`. */
export async function readJsonBody<Schema extends z.ZodType>(
  request: IncomingMessage,
  schema: Schema,
): Promise<z.output<Schema>> {
  const bytes = await readBody(request, MAX_JSON_BODY_BYTES);
  let value: unknown = {};
  if (bytes.length > 0) {
    try {
      value = JSON.parse(bytes.toString('utf8'));
    } catch (error) {
      throw new HttpError(400, `request body is not JSON: ${(error as Error).message}`);
    }
  }
  const result = schema.safeParse(value);
  if (!result.success) {
    throw new HttpError(400, `invalid request body: ${describeIssues(result.error)}`);
  }
  return result.data;
}

/** `job_spec.commands: expected array, received undefined; run.id: ...` */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`)
    .join('; ');
}
