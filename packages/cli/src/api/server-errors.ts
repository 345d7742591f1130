/**
 * The errors a request to the server ends with, and how to tell them apart; apart from the API
 * models (`api-errors.ts` reads an error answer with them), so that a command sends its first
 * request before zod and the models load.
 */
import { DstackError } from '@dstack/core';

/** One problem reported by the server, with the path of the offending request field if any. */
export interface ApiErrorDetail {
  message: string;
  code: string;
  fields: ReadonlyArray<ReadonlyArray<string | number>>;
}

/** The server answered with a non-2xx status. */
export class ServerApiError extends DstackError {
  static override readonly marker: string = '@dstack/cli/ServerApiError';
  override readonly name = 'ServerApiError';
  readonly statusCode: number;
  readonly endpoint: string;
  readonly details: readonly ApiErrorDetail[];

  constructor(endpoint: string, statusCode: number, details: readonly ApiErrorDetail[]) {
    super(details.map((detail) => detail.message).join('; ') || `HTTP ${statusCode}`);
    this.endpoint = endpoint;
    this.statusCode = statusCode;
    this.details = details;
  }
}

/** The token was rejected (HTTP 401). */
export class InvalidTokenError extends DstackError {
  static override readonly marker: string = '@dstack/cli/InvalidTokenError';
  override readonly name = 'InvalidTokenError';
  readonly serverUrl: string;
  readonly projectName: string;

  constructor(serverUrl: string, projectName: string) {
    super(`the server at ${serverUrl} rejected the token of project ${projectName}`);
    this.serverUrl = serverUrl;
    this.projectName = projectName;
  }
}

/** Nothing answers at the server URL (connection refused, unknown host, timeout). */
export class ServerUnreachableError extends DstackError {
  static override readonly marker: string = '@dstack/cli/ServerUnreachableError';
  override readonly name = 'ServerUnreachableError';
  readonly serverUrl: string;

  constructor(serverUrl: string, cause: unknown) {
    super(`cannot reach the dstack server at ${serverUrl}`, { cause });
    this.serverUrl = serverUrl;
  }
}

/** The server took the connection but did not answer within the CLI's timeout. */
export class ServerTimeoutError extends DstackError {
  static override readonly marker: string = '@dstack/cli/ServerTimeoutError';
  override readonly name = 'ServerTimeoutError';
  readonly serverUrl: string;
  readonly timeoutMs: number;

  constructor(serverUrl: string, timeoutMs: number, cause?: unknown) {
    super(`the server at ${serverUrl} did not answer within ${formatSeconds(timeoutMs)}`, { cause });
    this.serverUrl = serverUrl;
    this.timeoutMs = timeoutMs;
  }
}

function formatSeconds(milliseconds: number): string {
  return `${Number((milliseconds / 1000).toFixed(1))} s`;
}

/** Whether undici gave up waiting for an answer's headers (`headersTimeout`). */
export function isHeadersTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === 'UND_ERR_HEADERS_TIMEOUT';
}

/** The server answered 2xx with a body that does not match the API models. */
export class UnexpectedResponseError extends DstackError {
  static override readonly marker: string = '@dstack/cli/UnexpectedResponseError';
  override readonly name = 'UnexpectedResponseError';
}

/**
 * Whether an error answer says the token was rejected: 401 from servers that use it, or 403 with
 * code `not_authenticated` (this server answers 403 as dstack does; other 403s are "no access").
 */
export function isTokenRejected(statusCode: number, details: readonly ApiErrorDetail[]): boolean {
  return (
    statusCode === 401 ||
    (statusCode === 403 && details.some((detail) => detail.code === 'not_authenticated'))
  );
}

/** Whether an error answer says the named resource does not exist (400 or 404 `resource_not_exists`). */
export function isResourceMissing(details: readonly ApiErrorDetail[]): boolean {
  return details.some((detail) => detail.code === 'resource_not_exists');
}

/** Error codes meaning nothing answers at the URL. */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Whether a request failed because nothing answers at the URL (not an HTTP error). */
export function isUnreachableError(error: unknown): boolean {
  const candidate = error as { code?: unknown; errors?: unknown[]; cause?: unknown } | undefined;
  if (!candidate) return false;
  if (typeof candidate.code === 'string' && UNREACHABLE_CODES.has(candidate.code)) return true;
  // `localhost` resolves to IPv4 and IPv6; undici reports both failures together.
  if (Array.isArray(candidate.errors) && candidate.errors.some(isUnreachableError)) return true;
  return candidate.cause !== undefined && candidate.cause !== error && isUnreachableError(candidate.cause);
}
