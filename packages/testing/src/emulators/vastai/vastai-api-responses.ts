/** The answers and errors of Vast.ai's REST API, in its own shapes. */
import { EmulatorHttpError, type EmulatorResponse, json, text } from '../../emulator/emulator-responses.js';

/** `{"success": false, "error": <error>, "msg": <msg>, ...}` with `status`. */
export function vastaiError(
  status: number,
  error: string,
  msg: string,
  extra: Record<string, unknown> = {},
): EmulatorHttpError {
  return new EmulatorHttpError(json({ success: false, error, msg, ...extra }, status));
}

/** Vast.ai's throttling answer: plain text, no Retry-After. */
export function rateLimited(): EmulatorResponse {
  return text('API requests too frequent: endpoint threshold=4.0, please retry later.', 429);
}

export function invalidArgs(msg: string): EmulatorHttpError {
  return vastaiError(400, 'invalid_args', msg);
}

export function unauthorized(): EmulatorHttpError {
  return vastaiError(
    401,
    'auth_error',
    'Invalid user key: pass your API key as "Authorization: Bearer <key>"',
  );
}

/** A rental of an ask that is gone (rented, vanished, never listed): 410 as Vast.ai answers it. */
export function noSuchAsk(askId: number | string): EmulatorHttpError {
  return vastaiError(
    410,
    'no_such_ask',
    `error 410/3907: no_such_ask Instance type ${askId} is no longer available.`,
    { ask_id: Number(askId) },
  );
}

/** A JSON body that may come without a JSON content type. */
export function jsonBody(body: unknown): unknown {
  if (typeof body !== 'string') return body;
  try {
    return JSON.parse(body);
  } catch {
    throw invalidArgs('the request body is not valid JSON');
  }
}

/** A positive integer id from a path segment; the error names the segment. */
export function pathId(value: string | undefined, name: string): number {
  const id = Number(value);
  if (!Number.isInteger(id) || id <= 0)
    throw invalidArgs(`${name}: expected a positive integer id, got ${JSON.stringify(value)}`);
  return id;
}
