/**
 * The console's client of the public HTTP API: the same routes and bodies as the CLI
 * (packages/cli/src/api/client.ts), with the user's token as a bearer token. The wire types
 * come from @dstack/core (type-only imports: nothing of zod reaches the bundle), so an API
 * change that breaks the console fails its typecheck.
 */
import type { LogStreamLine } from '@dstack/core';

/** An error answer of the API: its status and dstack's `detail[0].msg` when present. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** dstack's error code (`not_authenticated`, `resource_not_exists`, …), when the server gave one. */
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The token was refused (dstack answers 403 `not_authenticated`), not an action forbidden. */
  get tokenRefused(): boolean {
    return this.status === 401 || (this.status === 403 && this.code === 'not_authenticated');
  }
}

async function errorFrom(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`;
  let code: string | null = null;
  try {
    const body = (await response.json()) as { detail?: Array<{ msg?: string; code?: string }> | string };
    const first = Array.isArray(body.detail) ? body.detail[0] : undefined;
    const detail = Array.isArray(body.detail) ? first?.msg : body.detail;
    if (detail) message = detail;
    code = first?.code ?? null;
  } catch {
    // Not JSON (a proxy's page): the status line says enough.
  }
  return new ApiError(response.status, message, code);
}

export interface Api {
  post<T>(path: string, body?: unknown): Promise<T>;
  /** Follows `logs/stream` from `nextToken`, calling `onLine` per line, until the stream ends or `signal` aborts. */
  streamLogs(
    project: string,
    body: { run_name: string; next_token?: string | null },
    onLine: (line: LogStreamLine) => void,
    signal: AbortSignal,
  ): Promise<void>;
}

/** `onUnauthorized` is called when the token is refused: revoked or refreshed elsewhere. */
export function createApi(token: string, onUnauthorized?: () => void): Api {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  async function request(path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
    const response = await fetch(path, { method: 'POST', headers, body: JSON.stringify(body ?? {}), signal });
    if (!response.ok) {
      const error = await errorFrom(response);
      if (error.tokenRefused) onUnauthorized?.();
      throw error;
    }
    return response;
  }
  return {
    async post<T>(path: string, body?: unknown): Promise<T> {
      const response = await request(path, body);
      const text = await response.text();
      return (text === '' ? null : JSON.parse(text)) as T;
    },
    async streamLogs(project, body, onLine, signal) {
      const response = await request(`/api/project/${encodeURIComponent(project)}/logs/stream`, body, signal);
      if (!response.body) return;
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffered = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += value;
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) if (line.trim() !== '') onLine(JSON.parse(line) as LogStreamLine);
      }
    },
  };
}

export const projectPath = (project: string, route: string) =>
  `/api/project/${encodeURIComponent(project)}/${route}`;

/**
 * A log event's message: base64 of the bytes, as in dstack (logs may not be UTF-8). One
 * streaming `decoder` per log keeps a character split across two events whole.
 */
export function decodeLogMessage(base64: string, decoder: TextDecoder): string {
  const bytes = Uint8Array.from(atob(base64), (char) => char.charCodeAt(0));
  return decoder.decode(bytes, { stream: true });
}
