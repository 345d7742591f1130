/**
 * Authentication and authorisation failures. The HTTP layer answers them with
 * 401 and 403 (see http/error-mapping.ts).
 */
import { DstackError, isDstackErrorNamed } from '@dstack/core';

/** No token, or a token no active user has: HTTP 401. */
export class NotAuthenticatedError extends DstackError {
  override readonly name = 'NotAuthenticatedError';

  constructor(message = 'Not authenticated') {
    super(message);
  }

  static override isInstance(error: unknown): error is NotAuthenticatedError {
    return isDstackErrorNamed(error, 'NotAuthenticatedError');
  }
}

/**
 * The user may not do this: HTTP 403 `Access denied`. Also used for projects
 * that do not exist, so that non-members cannot probe project names.
 */
export class ForbiddenError extends DstackError {
  override readonly name = 'ForbiddenError';

  constructor(message = 'Access denied') {
    super(message);
  }

  static override isInstance(error: unknown): error is ForbiddenError {
    return isDstackErrorNamed(error, 'ForbiddenError');
  }
}
