import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';

/** An error that maps to an HTTP status; its message is sent to the client as `{detail}`. */
export class HttpError extends Error {
  override readonly name = 'HttpError';

  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** Largest JSON body accepted: a task config with its keys and mounts is far smaller. */
const MAX_JSON_BODY_BYTES = 16 * 1024 * 1024;

export function sendJson(response: ServerResponse, statusCode: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(statusCode, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

/** Parses the JSON body with `schema`; a bad body is a 400 whose message names the fields. An empty body is `{}`. */
export async function readJsonBody<Schema extends z.ZodType>(
  request: IncomingMessage,
  schema: Schema,
): Promise<z.output<Schema>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_JSON_BODY_BYTES) {
      throw new HttpError(413, `request body exceeds ${MAX_JSON_BODY_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  let value: unknown = {};
  if (size > 0) {
    try {
      value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch (error) {
      throw new HttpError(400, `request body is not JSON: ${(error as Error).message}`);
    }
  }
  const result = schema.safeParse(value);
  if (!result.success) {
    const issues = result.error.issues
      .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`)
      .join('; ');
    throw new HttpError(400, `invalid request body: ${issues}`);
  }
  return result.data;
}
