import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentAuthorizationHeader } from '@dstack/core/agent-protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentApiError } from '../client/agent-api-error.js';
import { RunnerClient } from '../client/runner-client.js';
import { decodeLogs, pullUntil, submitBody } from '../testing/runner-job.test.helpers.js';
import { openSshUpgrade, UpgradeRefusedError } from '../testing/ssh.test.helpers.js';
import { type RunnerServer, startRunner } from './runner-server.js';

const TOKEN = 'runner-secret-token';

let homeDir: string;
let runner: RunnerServer;

beforeEach(async () => {
  homeDir = mkdtempSync(join(tmpdir(), 'dstack-runner-token-'));
  runner = await startRunner({ port: 0, homeDir, token: TOKEN });
});

afterEach(async () => {
  await runner.close();
  rmSync(homeDir, { recursive: true, force: true });
});

/** The status of a call that must fail. */
async function statusOf(call: Promise<unknown>): Promise<number> {
  const error = await call.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  if (!(error instanceof AgentApiError)) throw new Error(`expected an AgentApiError, got ${String(error)}`);
  return error.statusCode;
}

describe('a runner started with a token', () => {
  it('answers 401 to requests without it, or with another one', async () => {
    for (const client of [
      new RunnerClient(runner.url),
      new RunnerClient(runner.url, { token: 'wrong-token' }),
      new RunnerClient(runner.url, { token: `${TOKEN}x` }),
    ]) {
      expect(await statusOf(client.pull(0))).toBe(401);
      expect(await statusOf(client.submit(submitBody(['echo no'])))).toBe(401);
      expect(await statusOf(client.run())).toBe(401);
      expect(await statusOf(client.stop())).toBe(401);
    }
    const response = await fetch(`${runner.url}/api/pull?timestamp=0`);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    expect(await response.json()).toEqual({ detail: expect.stringContaining('requires its token') });
  });

  it('keeps the healthcheck open: it tells only which agent listens', async () => {
    expect(await new RunnerClient(runner.url).healthcheck()).toMatchObject({ service: 'dstack-runner' });
  });

  it('serves a job to a client with the token', async () => {
    const client = new RunnerClient(runner.url, { token: TOKEN });
    await client.submit(submitBody(['echo authorized']));
    await client.run();
    expect(decodeLogs((await pullUntil(client)).jobLogs)).toBe('authorized\n');
  });

  it('refuses the SSH upgrade without the token, and switches with it', async () => {
    const refused = await openSshUpgrade(runner.url).then(
      (socket) => {
        socket.destroy();
        return undefined;
      },
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(UpgradeRefusedError);
    expect((refused as UpgradeRefusedError).statusCode).toBe(401);
    // With the token the upgrade gets past the check: the runner has no job yet, so 409.
    const noJob = await openSshUpgrade(runner.url, 'ssh', agentAuthorizationHeader(TOKEN)).then(
      (socket) => {
        socket.destroy();
        return undefined;
      },
      (error: unknown) => error,
    );
    expect((noJob as UpgradeRefusedError).statusCode).toBe(409);
  });
});
