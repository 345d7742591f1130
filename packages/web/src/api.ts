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
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

async function errorFrom(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = (await response.json()) as { detail?: Array<{ msg?: string }> | string };
    const detail = Array.isArray(body.detail) ? body.detail[0]?.msg : body.detail;
    if (detail) message = detail;
  } catch {
    // Not JSON (a proxy's page): the status line says enough.
  }
  return new ApiError(response.status, message);
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

/** `onUnauthorized` is called on a 401: the token was revoked or refreshed elsewhere. */
export function createApi(token: string, onUnauthorized?: () => void): Api {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  async function request(path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
    const response = await fetch(path, { method: 'POST', headers, body: JSON.stringify(body ?? {}), signal });
    if (response.status === 401) onUnauthorized?.();
    if (!response.ok) throw await errorFrom(response);
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
