import {
  agentAuthorizationHeader,
  type RunnerHealthcheck,
  RunnerHealthcheckSchema,
  type RunnerPullResponse,
  RunnerPullResponseSchema,
  type RunnerRunResponse,
  RunnerRunResponseSchema,
  type RunnerSubmitBody,
} from '@dstack/core/agent-protocol';
import type { z } from 'zod';
import { AgentApiError } from './agent-api-error.js';

/** The subset of `fetch` the client uses; undici's `fetch` fits, as does the global one. */
export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>;

export interface RunnerClientOptions {
  /**
   * Passed to `fetch` as `init.dispatcher` (an undici `Dispatcher`, e.g. an `Agent` with
   * `connect.socketPath` to reach a runner through a forwarded Unix socket). Pair an undici 7
   * dispatcher with undici's own `fetch` (option `fetch`). Default: none.
   */
  dispatcher?: object;
  /** The fetch implementation. Default: the global `fetch`. */
  fetch?: FetchFunction;
  /** Per-request deadline in milliseconds, the whole answer included. Default 30 000. */
  timeoutMs?: number;
  /** The runner's token, sent as `Authorization: Bearer <token>` on every request. Default none. */
  token?: string | null;
  /** Aborts every request (e.g. when the caller gives up on its work), besides each one's deadline. */
  signal?: AbortSignal;
}

/** Talks to dstack's runner API (`@dstack/runner`'s server or dstack's Go runner). */
export class RunnerClient {
  private readonly baseUrl: string;
  private readonly fetchFunction: FetchFunction;

  constructor(
    baseUrl: string,
    private readonly options: RunnerClientOptions = {},
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.fetchFunction = options.fetch ?? globalThis.fetch;
  }

  healthcheck(): Promise<RunnerHealthcheck> {
    return this.call('GET', '/api/healthcheck', RunnerHealthcheckSchema);
  }

  async submit(body: RunnerSubmitBody): Promise<void> {
    await this.call('POST', '/api/submit', null, JSON.stringify(body));
  }

  /** Uploads the repo as a tar archive (may be empty). */
  async uploadCode(bytes: Uint8Array): Promise<void> {
    await this.call('POST', '/api/upload_code', null, bytes, 'application/octet-stream');
  }

  run(): Promise<RunnerRunResponse> {
    return this.call('POST', '/api/run', RunnerRunResponseSchema, '{}');
  }

  /** States and logs strictly newer than `timestamp` (ms); pass the answer's `last_updated` next time. */
  pull(timestamp: number): Promise<RunnerPullResponse> {
    return this.call('GET', `/api/pull?timestamp=${timestamp}`, RunnerPullResponseSchema);
  }

  async stop(): Promise<void> {
    await this.call('POST', '/api/stop', null, '{}');
  }

  private async call<Schema extends z.ZodType>(
    method: string,
    path: string,
    schema: Schema | null,
    body?: string | Uint8Array,
    contentType = 'application/json',
  ): Promise<z.output<Schema>> {
    const deadline = AbortSignal.timeout(this.options.timeoutMs ?? 30_000);
    const init: RequestInit = {
      method,
      signal: this.options.signal === undefined ? deadline : AbortSignal.any([deadline, this.options.signal]),
    };
    const headers: Record<string, string> = this.options.token
      ? agentAuthorizationHeader(this.options.token)
      : {};
    if (body !== undefined) {
      init.body = body;
      headers['content-type'] = contentType;
    }
    init.headers = headers;
    if (this.options.dispatcher !== undefined) {
      // Not in the DOM RequestInit type; undici's fetch (global or imported) reads it.
      (init as { dispatcher?: object }).dispatcher = this.options.dispatcher;
    }
    const response = await this.fetchFunction(`${this.baseUrl}${path}`, init);
    const text = await response.text();
    if (!response.ok) {
      throw new AgentApiError(
        `runner ${method} ${path} answered ${response.status}: ${text}`,
        response.status,
        text,
      );
    }
    if (schema === null) {
      return undefined as z.output<Schema>;
    }
    return schema.parse(JSON.parse(text));
  }
}
