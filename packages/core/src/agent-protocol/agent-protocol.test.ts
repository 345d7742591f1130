import {
  agentAuthorizationHeader,
  DSTACK_RUNNER_HTTP_PORT,
  DSTACK_RUNNER_SSH_PORT,
  DSTACK_SHIM_HTTP_PORT,
  deriveRunnerToken,
  hasAgentToken,
} from '@dstack/core/agent-protocol';
import { describe, expect, it } from 'vitest';

const TOKEN = 'runner-secret-token';

it('exposes the agent ports', () => {
  expect([DSTACK_SHIM_HTTP_PORT, DSTACK_RUNNER_HTTP_PORT, DSTACK_RUNNER_SSH_PORT]).toEqual([
    10998, 10999, 10022,
  ]);
});

describe('agent tokens', () => {
  it('accept only the exact bearer token', () => {
    const request = (authorization?: string) => ({ headers: authorization ? { authorization } : {} });
    expect(hasAgentToken(request(`Bearer ${TOKEN}`), TOKEN)).toBe(true);
    expect(hasAgentToken(request(`bearer ${TOKEN}`), TOKEN)).toBe(true);
    expect(hasAgentToken(request(TOKEN), TOKEN)).toBe(false);
    expect(hasAgentToken(request(`Bearer ${TOKEN.slice(0, -1)}`), TOKEN)).toBe(false);
    expect(hasAgentToken(request(), TOKEN)).toBe(false);
    expect(hasAgentToken({ headers: agentAuthorizationHeader(TOKEN) }, TOKEN)).toBe(true);
  });

  it('derive a runner token per task that differs between tasks and shims', () => {
    const token = deriveRunnerToken('shim-token', 'task-1');
    expect(token).toBe(deriveRunnerToken('shim-token', 'task-1'));
    expect(token).not.toBe(deriveRunnerToken('shim-token', 'task-2'));
    expect(token).not.toBe(deriveRunnerToken('other-shim-token', 'task-1'));
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
