/**
 * The agents' access token: a shim or runner started with a token answers only requests that
 * carry it (`Authorization: Bearer <token>`), so no other process on the host can read a job's
 * logs, submit tasks or open SSH sessions. The server chooses one token per instance and the
 * backend hands it to the agent it starts; a shim hands each task's runner a token derived from
 * its own and the task id, so a job that learns its runner's token reaches no other runner.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { HttpError } from './http-helpers.js';

/** The variable that gives the shim its token (read once at start, then removed from its environment). */
export const SHIM_TOKEN_ENV = 'DSTACK_SHIM_TOKEN';
/** The variable that gives the runner its token (read once at start, then removed from its environment). */
export const RUNNER_TOKEN_ENV = 'DSTACK_RUNNER_TOKEN';

/** The header an agent client sends: `Authorization: Bearer <token>`. */
export function agentAuthorizationHeader(token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` };
}

/**
 * Whether the request carries `token`. Compared in constant time; both sides are hashed first so
 * that neither a token's length nor its prefix shows in the time of a wrong guess.
 */
export function hasAgentToken(request: Pick<IncomingMessage, 'headers'>, token: string): boolean {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return false;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  if (match === null) return false;
  return timingSafeEqual(sha256(match[1] as string), sha256(token));
}

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
 * The runner token of a shim's task: HMAC-SHA256 of the task id keyed with the shim's token,
 * base64url. The shim starts the task's runner with it; the server, which knows the instance's
 * token and the task id (the job id), computes the same to reach that runner.
 */
export function deriveRunnerToken(shimToken: string, taskId: string): string {
  return createHmac('sha256', shimToken).update(`dstack-runner-token:${taskId}`).digest('base64url');
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

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
