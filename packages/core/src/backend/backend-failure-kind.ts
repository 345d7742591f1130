import {
  BackendApiCallError,
  BackendAuthenticationError,
  BackendRateLimitError,
  InvalidCredentialsError,
  NoCapacityError,
} from '../errors.js';

/**
 * What a backend's failure means for the launch that met it:
 * - `no-capacity`: this offer has no capacity, quota or balance now; the next offer may have;
 * - `authentication`: the provider refused the backend's credentials or denied the call;
 * - `rate-limit`: the provider throttled the calls; the same launch may pass a little later;
 * - `error`: anything else (a bug, a bad parameter, the provider's own failure).
 */
export type BackendFailureKind = 'no-capacity' | 'authentication' | 'rate-limit' | 'error';

/**
 * The kind of `error` thrown by a backend: its typed errors first, then the HTTP status of a
 * `BackendApiCallError` (401 and 403 are authentication, 429 is throttling), so a backend that
 * throws its API's errors as they come is classified too.
 */
export function classifyBackendFailure(error: unknown): BackendFailureKind {
  if (NoCapacityError.isInstance(error)) return 'no-capacity';
  if (BackendAuthenticationError.isInstance(error) || InvalidCredentialsError.isInstance(error)) {
    return 'authentication';
  }
  if (BackendRateLimitError.isInstance(error)) return 'rate-limit';
  if (BackendApiCallError.isInstance(error)) {
    if (error.statusCode === 401 || error.statusCode === 403) return 'authentication';
    if (error.statusCode === 429) return 'rate-limit';
  }
  return 'error';
}

const FAILURE_KIND_WORDS: Readonly<Record<BackendFailureKind, string>> = {
  'no-capacity': 'no capacity',
  authentication: 'authentication failed',
  'rate-limit': 'rate limited',
  error: 'error',
};

/** `backend aws: authentication failed: <message>`: a failure as a job's or instance's message says it. */
export function describeBackendFailure(
  backendType: string,
  kind: BackendFailureKind,
  message: string,
): string {
  return `backend ${backendType}: ${FAILURE_KIND_WORDS[kind]}: ${message}`;
}
