/**
 * How the server and the agents authenticate: a shim or runner started with a token answers only
 * requests that carry it (`Authorization: Bearer <token>`), and so does a gateway agent's
 * management API (a token per gateway). The server chooses one token per instance (and per
 * gateway) and the backend hands it to the agent it starts; a shim hands each task's runner a
 * token derived from its own and the task id, so a job that learns its runner's token reaches no
 * other runner. Enforcing it (which requests stay open, the 401) is the agents' own affair.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** The variable that gives the shim its token (read once at start, then removed from its environment). */
export const SHIM_TOKEN_ENV = 'DSTACK_SHIM_TOKEN';
/** The variable that gives the runner its token (read once at start, then removed from its environment). */
export const RUNNER_TOKEN_ENV = 'DSTACK_RUNNER_TOKEN';
/**
 * The variable that gives the gateway agent the token its management API requires (read once at
 * start, then removed from its environment), when it has no `--token-file`.
 */
export const GATEWAY_TOKEN_ENV = 'DSTACK_GATEWAY_TOKEN';

/** The header an agent client sends: `Authorization: Bearer <token>`. */
export function agentAuthorizationHeader(token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` };
}

/**
 * Whether the request carries `token`. Compared in constant time; both sides are hashed first so
 * that neither a token's length nor its prefix shows in the time of a wrong guess.
 */
export function hasAgentToken(
  request: { headers: Pick<IncomingHttpHeaders, 'authorization'> },
  token: string,
): boolean {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return false;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  if (match === null) return false;
  return timingSafeEqual(sha256(match[1] as string), sha256(token));
}

/**
 * The runner token of a shim's task: HMAC-SHA256 of the task id keyed with the shim's token,
 * base64url. The shim starts the task's runner with it; the server, which knows the instance's
 * token and the task id (the job id), computes the same to reach that runner.
 */
export function deriveRunnerToken(shimToken: string, taskId: string): string {
  return createHmac('sha256', shimToken).update(`dstack-runner-token:${taskId}`).digest('base64url');
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
