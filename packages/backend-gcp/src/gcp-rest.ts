/**
 * Calls to Google's REST APIs through undici, for the Compute and for the catalog collector: a
 * bearer token per call, JSON bodies, Google's error shape (`{"error":{"code","message",
 * "errors":[{"reason"}]}}`) as `GcpApiCallError`, and every page of a list (Compute:
 * `maxResults`/`pageToken` → `items`; Cloud Billing: `pageSize`/`pageToken` → `skus`).
 * Throttling (429) and Google's own failures (5xx) are retried with exponential backoff, as
 * Google's client libraries do; so are transport errors of a GET (a POST's may have reached
 * Google, so repeating it is the caller's choice).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BackendApiCallError,
  BackendAuthenticationError,
  BackendError,
  BackendRateLimitError,
} from '@dstack/core';
import { type Dispatcher, request } from 'undici';
import { type GcpAccessTokenSource, GcpTokenRefusedError } from './gcp-auth.js';

/** A call Google answered with an error status. */
export class GcpApiCallError extends BackendApiCallError {
  override readonly name: string = 'GcpApiCallError';
  /** Google's `errors[0].reason` (`notFound`, `alreadyExists`, `forbidden`, `rateLimitExceeded`…). */
  readonly reason: string | undefined;

  constructor(
    message: string,
    options: { statusCode: number; reason: string | undefined; url: string; responseBody: string },
  ) {
    super(message, options);
    this.reason = options.reason;
  }
}

/**
 * The token exchange failed without a verdict on the key: the token endpoint could not be reached
 * or did not answer as OAuth does.
 */
export class GcpTokenError extends BackendError {
  override readonly name: string = 'GcpTokenError';
}

/**
 * The token endpoint refused the key (revoked, malformed, or for no account it knows): no call of
 * the backend can pass until its credentials change.
 */
export class GcpTokenRefusedByEndpointError extends BackendAuthenticationError {
  override readonly name: string = 'GcpTokenRefusedByEndpointError';
}

/** Google's reasons for throttling; it answers some of them with 403, which otherwise means denied. */
const GOOGLE_RATE_LIMIT_REASONS: ReadonlySet<string> = new Set([
  'rateLimitExceeded',
  'userRateLimitExceeded',
]);

/**
 * `error` as core's `BackendRateLimitError` when Google throttled the call (a 403 whose reason
 * is a rate limit would otherwise read as a denied call); any other error as it is.
 */
export function typedGoogleError(error: unknown): unknown {
  if (
    error instanceof GcpApiCallError &&
    error.reason !== undefined &&
    GOOGLE_RATE_LIMIT_REASONS.has(error.reason)
  ) {
    return new BackendRateLimitError(error.message, { cause: error });
  }
  return error;
}

/** Whether `error` is Google's 404 for the resource. */
export function isNotFound(error: unknown): boolean {
  return error instanceof GcpApiCallError && error.statusCode === 404;
}

export interface GcpRestSettings {
  readonly token: GcpAccessTokenSource;
  /** undici dispatcher for every call (tests, proxies). Default: undici's global dispatcher. */
  readonly dispatcher?: Dispatcher;
  readonly signal?: AbortSignal;
  /** Attempts per call when the failure is retryable. Default 5 (4 retries). */
  readonly maxAttempts?: number;
  /** Backoff before the first retry, doubled for each next one. Default 1000 ms. */
  readonly retryBaseDelayMs?: number;
}

export type GcpHttpMethod = 'GET' | 'POST' | 'DELETE';

/** Google's error body: `{error: {message, errors: [{reason}]}}`, or the token endpoint's `error_description`. */
function readGoogleError(body: string): { message: string; reason: string | undefined } {
  try {
    const parsed = JSON.parse(body) as {
      error?: { message?: unknown; errors?: { reason?: unknown }[] } | string;
      error_description?: unknown;
    };
    if (typeof parsed.error === 'object' && typeof parsed.error.message === 'string') {
      const reason = parsed.error.errors?.[0]?.reason;
      return { message: parsed.error.message, reason: typeof reason === 'string' ? reason : undefined };
    }
    if (typeof parsed.error_description === 'string') {
      return { message: parsed.error_description, reason: undefined };
    }
  } catch {
    // Not JSON (a proxy's page): the text itself says more than nothing.
  }
  return { message: body.slice(0, 300), reason: undefined };
}

/**
 * One call of `method` on `url` (with `body` as JSON when given), its JSON answer (`{}` for an
 * empty one); retryable failures are tried again after a backoff.
 */
export async function callGoogleApi(
  method: GcpHttpMethod,
  url: URL,
  body: unknown,
  settings: GcpRestSettings,
): Promise<unknown> {
  const attempts = settings.maxAttempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    try {
      return await callOnce(method, url, body, settings);
    } catch (error) {
      const retryable =
        BackendApiCallError.isInstance(error) &&
        error.isRetryable &&
        (error.statusCode !== undefined || method === 'GET') &&
        !settings.signal?.aborted;
      if (!retryable || attempt >= attempts) throw error;
      await sleep((settings.retryBaseDelayMs ?? 1000) * 2 ** (attempt - 1), undefined, {
        signal: settings.signal,
      });
    }
  }
}

/** One authorized GET of `url`, its JSON body. */
export function getJson(url: URL, settings: GcpRestSettings): Promise<unknown> {
  return callGoogleApi('GET', url, undefined, settings);
}

async function callOnce(
  method: GcpHttpMethod,
  url: URL,
  body: unknown,
  settings: GcpRestSettings,
): Promise<unknown> {
  const where = `${url.origin}${url.pathname}`;
  let token: string;
  try {
    token = await settings.token();
  } catch (error) {
    const message = `Cannot get a GCP access token: ${(error as Error).message}`;
    if (error instanceof GcpTokenRefusedError)
      throw new GcpTokenRefusedByEndpointError(message, { cause: error });
    throw new GcpTokenError(message, { cause: error });
  }
  let response: Dispatcher.ResponseData;
  try {
    response = await request(url, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'application/json',
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
      dispatcher: settings.dispatcher,
      signal: settings.signal,
    });
  } catch (error) {
    throw new BackendApiCallError(`${method} ${where} failed: ${(error as Error).message}`, {
      url: where,
      cause: error,
    });
  }
  const text = await response.body.text();
  if (response.statusCode >= 400) {
    const { message, reason } = readGoogleError(text);
    throw new GcpApiCallError(`${method} ${where} answered ${response.statusCode}: ${message}`, {
      statusCode: response.statusCode,
      reason,
      url: where,
      responseBody: text.slice(0, 2000),
    });
  }
  if (text === '') return {};
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new BackendApiCallError(`${method} ${where} answered a body that is not JSON`, {
      statusCode: response.statusCode,
      url: where,
      cause: error,
    });
  }
}

export interface PagedListOptions {
  /** The array's key in each page: `items` (Compute), `skus` (Billing). */
  readonly itemsKey: string;
  /** The page-size parameter and value: `maxResults` (Compute, ≤500), `pageSize` (Billing, ≤5000). */
  readonly pageSize?: readonly [parameter: string, size: number];
}

/** Every item of a paged list at `url`, following `nextPageToken` until it is absent or empty. */
export async function listAllPages(
  url: URL,
  options: PagedListOptions,
  settings: GcpRestSettings,
): Promise<unknown[]> {
  const items: unknown[] = [];
  let pageToken = '';
  for (;;) {
    const pageUrl = new URL(url);
    if (options.pageSize) pageUrl.searchParams.set(options.pageSize[0], String(options.pageSize[1]));
    if (pageToken) pageUrl.searchParams.set('pageToken', pageToken);
    const page = (await getJson(pageUrl, settings)) as Record<string, unknown>;
    const pageItems = page[options.itemsKey] ?? [];
    if (!Array.isArray(pageItems)) {
      throw new BackendApiCallError(`GET ${url.pathname}: "${options.itemsKey}" is not a list`, {
        url: `${url.origin}${url.pathname}`,
      });
    }
    items.push(...pageItems);
    const next = page.nextPageToken;
    if (typeof next !== 'string' || next === '') return items;
    pageToken = next;
  }
}

/** `base` + `path`, keeping the base's own path (`…/compute/v1` + `/projects/p/regions`). */
export function joinUrl(base: string, path: string): URL {
  return new URL(`${base.replace(/\/+$/, '')}${path}`);
}
