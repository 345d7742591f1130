import {
  agentAuthorizationHeader,
  callDeadline,
  type RunnerHealthcheck,
  RunnerHealthcheckSchema,
  type RunnerMetricsResponse,
  RunnerMetricsResponseSchema,
  type RunnerPullResponse,
  RunnerPullResponseSchema,
  type RunnerRunResponse,
  RunnerRunResponseSchema,
  type RunnerSubmitBody,
} from '@dstack/core/agent-protocol';
import { Agent, type Dispatcher, request } from 'undici';
import type { z } from 'zod';
import { AgentApiError } from './agent-api-error.js';

/** The subset of `fetch` the client uses; undici's `fetch` fits, as does the global one. */
export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>;

export interface RunnerClientOptions {
  /**
   * The undici `Dispatcher` of the requests (e.g. an `Agent` with `connect.socketPath` to reach a
   * runner through a forwarded Unix socket); with option `fetch`, passed as `init.dispatcher`.
   * Default: one connection per runner.
   */
  dispatcher?: object;
  /**
   * A fetch implementation to make the requests with instead of undici's `request` (which costs
   * the server a fraction of `fetch`'s CPU per call: a pipeline makes thousands). Default: none.
   */
  fetch?: FetchFunction;
  /** Per-request deadline in milliseconds, the whole answer included. Default 30 000. */
  timeoutMs?: number;
  /** The runner's token, sent as `Authorization: Bearer <token>` on every request. Default none. */
  token?: string | null;
  /** Aborts every request (e.g. when the caller gives up on its work), besides each one's deadline. */
  signal?: AbortSignal;
}

/**
 * The default dispatcher: one connection per runner. A job's runner is called one request at a
 * time, and undici's pool frees a connection a tick after its response has been read, so a call
 * made right after another opened a second connection to every runner (500 runs, 1,000 connects).
 * Requests beyond one at a time (a metrics sample during a pull) wait for the connection.
 */
const ONE_CONNECTION_PER_RUNNER = new Agent({ connections: 1 });

/** Talks to dstack's runner API (`@dstack/runner`'s server or dstack's Go runner). */
export class RunnerClient {
  private readonly baseUrl: string;

  constructor(
    baseUrl: string,
    private readonly options: RunnerClientOptions = {},
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
  }

  healthcheck(): Promise<RunnerHealthcheck> {
    return this.call('GET', '/api/healthcheck', RunnerHealthcheckSchema);
  }

  async submit(body: RunnerSubmitBody): Promise<void> {
    await this.call('POST', '/api/submit', null, JSON.stringify(body));
  }

  /** Uploads the job's code: a git diff (remote repo), a tar archive (local directory), or nothing. */
  async uploadCode(bytes: Uint8Array): Promise<void> {
    await this.call('POST', '/api/upload_code', null, bytes, 'application/octet-stream');
  }

  /** Uploads one of the job's file archives (`file_archives[].id`). */
  async uploadArchive(id: string, bytes: Uint8Array): Promise<void> {
    await this.call(
      'POST',
      `/api/upload_archive?id=${encodeURIComponent(id)}`,
      null,
      bytes,
      'application/octet-stream',
    );
  }

  run(): Promise<RunnerRunResponse> {
    return this.call('POST', '/api/run', RunnerRunResponseSchema, '{}');
  }

  /** States and logs strictly newer than `timestamp` (ms); pass the answer's `last_updated` next time. */
  pull(timestamp: number): Promise<RunnerPullResponse> {
    return this.call('GET', `/api/pull?timestamp=${timestamp}`, RunnerPullResponseSchema);
  }

  /** One sample of the job's CPU, memory and GPU figures (dstack's `GET /api/metrics`). */
  metrics(): Promise<RunnerMetricsResponse> {
    return this.call('GET', '/api/metrics', RunnerMetricsResponseSchema);
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
    const timeoutMs = this.options.timeoutMs ?? 30_000;
    const headers: Record<string, string> = this.options.token
      ? agentAuthorizationHeader(this.options.token)
      : {};
    if (body !== undefined) headers['content-type'] = contentType;
    const deadline = callDeadline(timeoutMs, this.options.signal);
    let response: { status: number; text: string };
    try {
      response = this.options.fetch
        ? await this.viaFetch(this.options.fetch, method, path, headers, deadline.signal, body)
        : await this.viaRequest(method, path, headers, deadline.signal, timeoutMs, body);
    } finally {
      deadline.clear();
    }
    const { status, text } = response;
    if (status < 200 || status >= 300) {
      throw new AgentApiError(`runner ${method} ${path} answered ${status}: ${text}`, status, text);
    }
    if (schema === null) {
      return undefined as z.output<Schema>;
    }
    return schema.parse(JSON.parse(text));
  }

  /** The call through undici's `request`: `timeoutMs` also bounds the headers and each pause of the body. */
  private async viaRequest(
    method: string,
    path: string,
    headers: Record<string, string>,
    signal: AbortSignal,
    timeoutMs: number,
    body?: string | Uint8Array,
  ): Promise<{ status: number; text: string }> {
    const response = await request(`${this.baseUrl}${path}`, {
      method: method as Dispatcher.HttpMethod,
      headers,
      body,
      signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      dispatcher: (this.options.dispatcher as Dispatcher | undefined) ?? ONE_CONNECTION_PER_RUNNER,
    });
    return { status: response.statusCode, text: await response.body.text() };
  }

  private async viaFetch(
    fetchFunction: FetchFunction,
    method: string,
    path: string,
    headers: Record<string, string>,
    signal: AbortSignal,
    body?: string | Uint8Array,
  ): Promise<{ status: number; text: string }> {
    const init: RequestInit = { method, headers, signal };
    if (body !== undefined) init.body = body;
    if (this.options.dispatcher !== undefined) {
      // Not in the DOM RequestInit type; undici's fetch (global or imported) reads it.
      (init as { dispatcher?: object }).dispatcher = this.options.dispatcher;
    }
    const response = await fetchFunction(`${this.baseUrl}${path}`, init);
    return { status: response.status, text: await response.text() };
  }
}
