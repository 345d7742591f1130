/**
 * The agents' side of the access token (its header and variables are the agent protocol's, in
 * `@dstack/core/agent-protocol`): a shim or runner started with a token answers only requests that
 * carry it, so no other process on the host can read a job's logs, submit tasks or open SSH sessions.
 */
import type { IncomingMessage } from 'node:http';
import { hasAgentToken } from '@dstack/core/agent-protocol';
import { HttpError } from './http-helpers.js';

/**
 * The 401 for a request without the agent's token; null when it may pass (or the agent has no
 * token). `GET /api/healthcheck` stays open: it tells only that an agent of some version
 * listens, which the open port tells anyway, and the shim polls it to learn that a runner in a
 * container came up.
 */
export function agentTokenRefusal(
  request: Pick<IncomingMessage, 'headers' | 'method' | 'url'>,
  token: string | null,
  agent: 'shim' | 'runner',
): HttpError | null {
  if (token === null || hasAgentToken(request, token)) return null;
  if (
    request.method === 'GET' &&
    new URL(request.url ?? '/', 'http://agent').pathname === '/api/healthcheck'
  ) {
    return null;
  }
  return new HttpError(401, `this ${agent} requires its token: send "Authorization: Bearer <token>"`);
}

/**
 * A token given at start: null when absent or blank; surrounding whitespace (a file's final
 * newline) is dropped. A token with whitespace inside cannot travel in the header: refused.
 */
export function normalizeAgentToken(value: string | undefined | null, source: string): string | null {
  const token = value?.trim() ?? '';
  if (token === '') return null;
  if (/\s/.test(token)) throw new Error(`${source}: the agent token must not contain whitespace`);
  return token;
}
