import { type LogStreamLine, LogStreamLineSchema } from '@dstack/core';
import { UnexpectedResponseError } from './api-errors.js';

/** The lines of a `logs/stream` answer, parsed and checked, in the order the server sent them. */
export type LogStreamLines = AsyncIterable<LogStreamLine>;

/**
 * Splits an NDJSON body into lines and validates each with core's `LogStreamLineSchema`. A
 * line the schema rejects is an unexpected answer. A body cut mid-line just ends: the caller
 * sees a stream without its `end` line, as with any broken connection.
 */
export async function* readLogStreamLines(
  body: AsyncIterable<Uint8Array | string>,
  endpoint: string,
): AsyncGenerator<LogStreamLine, void, undefined> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let newline = buffer.indexOf('\n');
    while (newline >= 0) {
      const text = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      if (text.trim() !== '') yield parseLine(text, endpoint);
      newline = buffer.indexOf('\n');
    }
  }
}

function parseLine(text: string, endpoint: string): LogStreamLine {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UnexpectedResponseError(`unexpected answer from ${endpoint}: a line is not JSON`);
  }
  const parsed = LogStreamLineSchema.safeParse(json);
  if (!parsed.success) {
    throw new UnexpectedResponseError(`unexpected answer from ${endpoint}: ${parsed.error.message}`, {
      cause: parsed.error,
    });
  }
  return parsed.data;
}
