/**
 * RunPod's GraphQL API through undici: one `POST {query, variables}` per call, with the API key as
 * a bearer token (the catalog queries go without one, as gpuhunt's). RunPod answers a refused
 * key with 401/403 and a failed operation with HTTP 200 and `errors` (`RunpodGraphqlError`).
 * The endpoint and the undici dispatcher are settings, so tests point the real client at an emulator.
 */
import { BackendApiCallError, BackendError } from '@dstack/core';
import { type Dispatcher, request } from 'undici';

export interface RunpodApiOptions {
  /** The GraphQL endpoint, e.g. `https://api.runpod.io/graphql`. */
  endpointUrl: string;
  /** Sent as `Authorization: Bearer`; the catalog queries need none. */
  apiKey?: string;
  /** Where requests go (tests: an emulator's). Default undici's global dispatcher. */
  dispatcher?: Dispatcher;
  /** Per-request limit on headers and body, in milliseconds. Default 120 000 (dstack's). */
  timeoutMs?: number;
}

/** One entry of a GraphQL answer's `errors`. */
export interface RunpodGraphqlErrorEntry {
  message: string;
  path?: unknown[];
  extensions?: Record<string, unknown>;
}

/** RunPod answered the operation with `errors` (HTTP 200): a refusal, not a transport failure. */
export class RunpodGraphqlError extends BackendError {
  static override readonly marker: string = '@dstack/backend-runpod/RunpodGraphqlError';
  override readonly name: string = 'RunpodGraphqlError';
  readonly errors: readonly RunpodGraphqlErrorEntry[];

  constructor(operation: string, errors: readonly RunpodGraphqlErrorEntry[]) {
    super(`RunPod ${operation} failed: ${errors.map((error) => error.message).join('; ') || 'no message'}`);
    this.errors = errors;
  }

  /** The first error's message, what dstack matches RunPod's answers on. */
  get firstMessage(): string {
    return this.errors[0]?.message ?? '';
  }
}

const DEFAULT_TIMEOUT_MS = 120_000;

/** The GraphQL client of one API key. */
export class RunpodApi {
  readonly #endpointUrl: string;
  readonly #apiKey: string | undefined;
  readonly #dispatcher: Dispatcher | undefined;
  readonly #timeoutMs: number;

  constructor(options: RunpodApiOptions) {
    this.#endpointUrl = options.endpointUrl;
    this.#apiKey = options.apiKey;
    this.#dispatcher = options.dispatcher;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /**
   * Runs one operation and returns its `data`. Throws `BackendApiCallError` for an HTTP failure
   * (401/403 with `statusCode`, so callers can tell a refused key) and `RunpodGraphqlError` when
   * the answer has `errors`.
   */
  async graphql<T>(
    operation: string,
    query: string,
    variables: Record<string, unknown> = {},
    signal?: AbortSignal,
  ): Promise<T> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json',
    };
    if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
    let response: Dispatcher.ResponseData;
    try {
      response = await request(this.#endpointUrl, {
        method: 'POST',
        headers,
        body: JSON.stringify({ query, variables }),
        dispatcher: this.#dispatcher,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
        signal,
      });
    } catch (error) {
      throw new BackendApiCallError(
        `RunPod ${operation} failed: ${(error as Error).message ?? String(error)}`,
        {
          url: this.#endpointUrl,
          isRetryable: true,
          cause: error,
        },
      );
    }
    const text = await response.body.text();
    let body: { data?: unknown; errors?: unknown } | null = null;
    try {
      body = text === '' ? null : (JSON.parse(text) as { data?: unknown; errors?: unknown });
    } catch {
      // 429s and gateway errors come as plain text.
    }
    if (response.statusCode < 200 || response.statusCode >= 300) {
      throw new BackendApiCallError(
        `RunPod ${operation} answered ${response.statusCode}: ${firstMessage(body) ?? text.slice(0, 200)}`,
        { statusCode: response.statusCode, url: this.#endpointUrl, responseBody: text.slice(0, 2000) },
      );
    }
    if (Array.isArray(body?.errors) && body.errors.length > 0) {
      throw new RunpodGraphqlError(operation, body.errors as RunpodGraphqlErrorEntry[]);
    }
    if (body === null || typeof body.data !== 'object' || body.data === null) {
      throw new BackendApiCallError(`RunPod ${operation} gave an answer without data`, {
        statusCode: response.statusCode,
        responseBody: text.slice(0, 2000),
      });
    }
    return body.data as T;
  }
}

function firstMessage(body: { errors?: unknown } | null): string | undefined {
  const errors = body?.errors;
  if (!Array.isArray(errors)) return undefined;
  const message = (errors[0] as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? message : undefined;
}
