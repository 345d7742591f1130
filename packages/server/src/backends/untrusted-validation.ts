/**
 * A backend config from an API request is checked against the provider with the server's
 * network: its answer must not tell the user what the server can reach. So the check has a
 * short deadline, and every failure that is not the configurator's own verdict on a field
 * (a `ServerClientError`) — connection refused, timeout, TLS, an answer that is not the
 * provider's, a bug — is the same 400 naming the field, with nothing from what answered.
 */
import { InvalidCredentialsError, ServerClientError } from '@dstack/core';

/** The one message of every failure to reach the provider while checking an API request's config. */
export const PROVIDER_UNREACHABLE_MESSAGE =
  'Could not reach the provider with these credentials and endpoint: check them and try again';

/** The field such a failure names: the custom endpoint when one is given, else the creds. */
export function unreachableField(input: Record<string, unknown>): string[] {
  return input.endpoint_url != null ? ['endpoint_url'] : ['creds'];
}

export interface UntrustedValidationOptions {
  /** How long `work` may take before the request is answered with the generic 400. */
  deadlineMs: number;
  /** The field the generic 400 names (see `unreachableField`). */
  field: string[];
  /** Where the real cause goes, for the server's admin. */
  logError: (message: string) => void;
}

/**
 * Runs `work` (validation and record building) with a signal aborted at the deadline. Its
 * `ServerClientError`s pass through; anything else, or the deadline, is the generic 400.
 */
export async function runUntrustedValidation<T>(
  work: (signal: AbortSignal) => Promise<T>,
  options: UntrustedValidationOptions,
): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`no answer within ${options.deadlineMs} ms`);
      controller.abort(error);
      reject(error);
    }, options.deadlineMs);
  });
  const working = work(controller.signal);
  // After the deadline, `work` may still fail; nobody waits for it any more.
  working.catch(() => {});
  try {
    return await Promise.race([working, deadline]);
  } catch (error) {
    if (ServerClientError.isInstance(error) && !controller.signal.aborted) throw error;
    options.logError(
      `Backend config check failed (answered as "${PROVIDER_UNREACHABLE_MESSAGE}"): ${(error as Error)?.message ?? String(error)}`,
    );
    throw new InvalidCredentialsError([options.field], { message: PROVIDER_UNREACHABLE_MESSAGE });
  } finally {
    clearTimeout(timer);
  }
}
