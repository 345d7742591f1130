/**
 * Authentication and authorisation failures. The HTTP layer answers both with 403, as dstack
 * does, telling them apart by code (see http/error-mapping.ts).
 */
import { DstackError } from '@dstack/core';

/** No token, or a token no active user has: HTTP 403, code `not_authenticated`. */
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
