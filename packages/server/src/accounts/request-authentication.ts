/**
 * How the server knows who a request is: the user of its bearer token, and the project access
 * the HTTP handler checks routes against (`createHttpHandler`'s `authentication`, from app.ts).
 * The proxies authenticate their own requests with `authenticate` too.
 */
import type { IncomingMessage } from 'node:http';
import type { AppContext } from '../context.js';
import type { UsersTable } from '../db/schema.js';
import { bearerToken, type RequestAuthentication } from '../http/http-handler.js';
import { NotAuthenticatedError } from '../security/access-errors.js';
import { getProjectForUser, hasProjectRole } from './projects.js';
import { findUserByToken } from './users.js';

/** The user of the request's `Authorization: Bearer <token>`; throws `NotAuthenticatedError`. */
export async function authenticate(app: AppContext, request: IncomingMessage): Promise<UsersTable> {
  const header = request.headers.authorization;
  if (!header) throw new NotAuthenticatedError('Not authenticated: send "Authorization: Bearer <token>"');
  const token = bearerToken(request);
  if (!token)
    throw new NotAuthenticatedError('Not authenticated: the Authorization header must be "Bearer <token>"');
  const user = await findUserByToken(app, token);
  if (!user) throw new NotAuthenticatedError('Invalid token');
  return user;
}

/** The handler's authentication, against this app's users and projects. */
export function requestAuthentication(app: AppContext): RequestAuthentication {
  return {
    authenticate: (request) => authenticate(app, request),
    projectAccess: (user, projectName) => getProjectForUser(app, user, projectName),
    hasProjectRole,
  };
}
