import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deriveRunnerToken } from '@dstack/core/agent-protocol';
import { AgentApiError, RunnerClient } from '@dstack/runner';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ShimClient } from '../client/shim-client.js';
import {
  eventually,
  isFinished,
  pullUntil,
  submitBody,
  taskConfig,
} from '../testing/shim-test.test.helpers.js';
import { type ShimServer, startShim } from './shim-server.js';

const TOKEN = 'shim-secret-token';

let homeDir: string;
let shim: ShimServer;

beforeEach(async () => {
  homeDir = mkdtempSync(join(tmpdir(), 'dstack-shim-token-'));
  shim = await startShim({ port: 0, homeDir, token: TOKEN });
});

afterEach(async () => {
  await shim.close();
  rmSync(homeDir, { recursive: true, force: true });
});

async function statusOf(call: Promise<unknown>): Promise<number> {
  const error = await call.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  if (!(error instanceof AgentApiError)) throw new Error(`expected an AgentApiError, got ${String(error)}`);
  return error.statusCode;
}

describe('a shim started with a token', () => {
  it('answers 401 to every request but the healthcheck without it', async () => {
    for (const client of [new ShimClient(shim.url), new ShimClient(shim.url, { token: 'wrong' })]) {
      expect(await statusOf(client.listTasks())).toBe(401);
      expect(await statusOf(client.getTask('any'))).toBe(401);
      expect(await statusOf(client.submitTask(taskConfig('intruder')))).toBe(401);
      expect(await statusOf(client.instanceInfo())).toBe(401);
      expect(await statusOf(client.shutdown())).toBe(401);
      expect(await client.healthcheck()).toMatchObject({ service: 'dstack-shim' });
    }
    expect(await new ShimClient(shim.url, { token: TOKEN }).listTasks()).toEqual([]);
  });

  it("starts each task's runner with the token derived for that task", async () => {
    const client = new ShimClient(shim.url, { token: TOKEN });
    await client.submitTask(taskConfig('task-a'));
    const task = await eventually(async () => {
      const found = await client.getTask('task-a');
      return found?.status === 'running' ? found : undefined;
    }, 'task-a to run');
    const runnerUrl = `http://127.0.0.1:${task.ports[0]!.host}`;
    // Neither no token, nor the shim's own, nor another task's opens this runner.
    for (const token of [undefined, TOKEN, deriveRunnerToken(TOKEN, 'task-b')]) {
      expect(await statusOf(new RunnerClient(runnerUrl, { token }).pull(0))).toBe(401);
    }
    const runner = new RunnerClient(runnerUrl, { token: deriveRunnerToken(TOKEN, 'task-a') });
    await runner.submit(submitBody(['echo "token=[$DSTACK_SHIM_TOKEN$DSTACK_RUNNER_TOKEN]"']));
    await runner.run();
    expect((await pullUntil(runner, isFinished)).output).toBe('token=[]\n');
  });
});
