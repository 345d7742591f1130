/** What an emulator route answers. Build it with `json`, `xml`, `text` or `empty`. */
export interface EmulatorResponse {
  /** HTTP status. Default 200. */
  readonly status?: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** The raw body; a string is sent as UTF-8. Default empty. */
  readonly body?: string | Uint8Array;
}

/** A JSON answer (`application/json`). */
export function json(value: unknown, status = 200, headers: Record<string, string> = {}): EmulatorResponse {
  return { status, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(value) };
}

/** An XML answer (`text/xml`, as the EC2 Query API sends). */
export function xml(document: string, status = 200, headers: Record<string, string> = {}): EmulatorResponse {
  return { status, headers: { 'content-type': 'text/xml;charset=UTF-8', ...headers }, body: document };
}

/** A plain-text answer. */
export function text(body: string, status = 200, headers: Record<string, string> = {}): EmulatorResponse {
  return { status, headers: { 'content-type': 'text/plain;charset=UTF-8', ...headers }, body };
}

/** An answer without a body (204 unless told). */
export function empty(status = 204, headers: Record<string, string> = {}): EmulatorResponse {
  return { status, headers };
}

/**
 * Thrown by a route handler to answer with `response` (e.g. a provider error
 * document) from deep inside the emulator's logic.
 */
export class EmulatorHttpError extends Error {
  override readonly name = 'EmulatorHttpError';
  constructor(
    readonly response: EmulatorResponse,
    message = `emulator answered ${response.status ?? 200}`,
  ) {
    super(message);
  }
}

/**
 * Thrown by a route handler to drop the connection without an answer, after whatever the
 * handler did: a provider's answer lost on the way, which a client sees as a reset socket.
 */
export class EmulatorConnectionReset extends Error {
  override readonly name = 'EmulatorConnectionReset';
}
