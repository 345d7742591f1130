/**
 * Compute Engine v1 REST for one project, over `gcp-rest.ts`: paths relative to
 * `projects/{project}`, query parameters, paged lists.
 */
import type { Dispatcher } from 'undici';
import type { GcpAccessTokenSource } from './gcp-auth.js';
import {
  callGoogleApi,
  type GcpHttpMethod,
  type GcpRestSettings,
  joinUrl,
  listAllPages,
} from './gcp-rest.js';

export interface GcpComputeApiSettings {
  /** Compute's v1 base URL (`…/compute/v1`). */
  readonly baseUrl: string;
  readonly project: string;
  readonly tokens: GcpAccessTokenSource;
  /** undici dispatcher for every call (tests, proxies). Default undici's global one. */
  readonly dispatcher?: Dispatcher;
  /** Attempts per call on 429, 5xx and a GET's transport errors. Default 4. */
  readonly maxAttempts?: number;
  /** Stops every call (and the backoff between attempts) when aborted. */
  readonly signal?: AbortSignal;
}

/** Backoff before the first retry of a Compute call, doubled for each next one. */
const RETRY_BASE_DELAY_MS = 200;

export class GcpComputeApi {
  readonly project: string;
  readonly #base: string;
  readonly #rest: GcpRestSettings;
  readonly #settings: GcpComputeApiSettings;

  constructor(settings: GcpComputeApiSettings) {
    this.#settings = settings;
    this.project = settings.project;
    this.#base = settings.baseUrl;
    this.#rest = {
      token: settings.tokens,
      dispatcher: settings.dispatcher,
      maxAttempts: settings.maxAttempts ?? 4,
      retryBaseDelayMs: RETRY_BASE_DELAY_MS,
      signal: settings.signal,
    };
  }

  /** The same client for another project (one that shares a reservation with this one). */
  forProject(project: string): GcpComputeApi {
    return project === this.project ? this : new GcpComputeApi({ ...this.#settings, project });
  }

  /** GET `projects/{project}/{path}` (`path` '' is the project itself). */
  get<T>(path: string, query: Record<string, string> = {}): Promise<T> {
    return this.call<T>('GET', path, { query });
  }

  post<T>(path: string, body: unknown, query: Record<string, string> = {}): Promise<T> {
    return this.call<T>('POST', path, { body, query });
  }

  delete<T>(path: string): Promise<T> {
    return this.call<T>('DELETE', path, {});
  }

  /** Every item of a paged list (`items`, `nextPageToken`). */
  async list<T>(path: string, query: Record<string, string> = {}): Promise<T[]> {
    return (await listAllPages(this.#url(path, query), { itemsKey: 'items' }, this.#rest)) as T[];
  }

  async call<T>(
    method: GcpHttpMethod,
    path: string,
    options: { body?: unknown; query?: Record<string, string> },
  ): Promise<T> {
    return (await callGoogleApi(method, this.#url(path, options.query), options.body, this.#rest)) as T;
  }

  #url(path: string, query: Record<string, string> = {}): URL {
    const url = joinUrl(this.#base, `/projects/${encodeURIComponent(this.project)}${path ? `/${path}` : ''}`);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    return url;
  }
}
