/**
 * Authentication and authorisation failures. The HTTP layer answers them with
 * 401 and 403 (see http/error-mapping.ts).
 */
import { DstackError } from '@dstack/core';

/** No token, or a token no active user has: HTTP 401. */
export class NotAuthenticatedError extends DstackError {
  static override readonly marker: string = '@dstack/server/NotAuthenticatedError';
  override readonly name = 'NotAuthenticatedError';

  constructor(message = 'Not authenticated') {
    super(message);
  }
}

/**
 * The user may not do this: HTTP 403 `Access denied`. Also used for projects
 * that do not exist, so that non-members cannot probe project names.
 */
export class ForbiddenError extends DstackError {
  static override readonly marker: string = '@dstack/server/ForbiddenError';
  override readonly name = 'ForbiddenError';

  constructor(message = 'Access denied') {
    super(message);
  }
}
