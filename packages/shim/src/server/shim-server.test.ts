import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TaskInfo } from '@dstack/core/agent-protocol';
import { AgentApiError, RunnerClient } from '@dstack/runner';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ShimClient } from '../client/shim-client.js';
import {
  eventually,
  isFinished,
  processExists,
  pullUntil,
  submitBody,
  taskConfig,
} from '../testing/shim-test.test.helpers.js';
import { type ShimServer, startShim } from './shim-server.js';

let homeDir: string;
let shim: ShimServer | undefined;
let client: ShimClient;

beforeEach(async () => {
  homeDir = mkdtempSync(join(tmpdir(), 'dstack-shim-server-'));
  shim = await startShim({ port: 0, homeDir });
  client = new ShimClient(shim.url);
});

afterEach(async () => {
  await shim?.close();
  shim = undefined;
  rmSync(homeDir, { recursive: true, force: true });
});

async function runningTask(id: string): Promise<TaskInfo> {
  return eventually(async () => {
    const task = await client.getTask(id);
    return task?.status === 'running' ? task : undefined;
  }, `task ${id} to run`);
}

describe('shim API (process runtime)', () => {
  it('answers the healthcheck and the instance info of a host without GPUs', async () => {
    expect(await client.healthcheck()).toEqual({ service: 'dstack-shim', version: '0.1.0' });
    expect(await client.instanceInfo()).toEqual({ gpu_vendor: null, gpu_driver_version: null });
  });

  it('runs a task whose runner drives a job to done, then terminates and removes it', async () => {
    await client.submitTask(taskConfig('task-1', { env: { FROM_TASK: 'task-env' } }));
    const task = await runningTask('task-1');
    expect(task.ports).toEqual([{ container: 10999, host: expect.any(Number) }]);
    expect(task).toMatchObject({ container_name: null, container_id: null, termination_reason: null });
    expect(await client.listTasks()).toEqual([{ id: 'task-1', status: 'running' }]);

    const runner = new RunnerClient(`http://127.0.0.1:${task.ports[0]!.host}`);
    await runner.submit(submitBody(['echo "$FROM_TASK in $DSTACK_RUN_NAME"']));
    await runner.run();
    const job = await pullUntil(runner, isFinished);
    expect(job.output).toBe('task-env in shim-test-run\n');
    expect(job.states.at(-1)?.state).toBe('done');

    await expect(client.removeTask('task-1')).rejects.toMatchObject({ statusCode: 409 });
    await client.terminateTask('task-1', { termination_reason: 'done_by_runner', timeout: 1 });
    expect(await client.getTask('task-1')).toMatchObject({
      status: 'terminated',
      termination_reason: 'done_by_runner',
      ports: [],
    });
    await expect(runner.healthcheck()).rejects.toThrow();
    await client.removeTask('task-1');
    expect(await client.getTask('task-1')).toBeNull();
    expect(await client.listTasks()).toEqual([]);
  });

  it('stops a running job when its task is terminated', async () => {
    await client.submitTask(taskConfig('task-2'));
    const task = await runningTask('task-2');
    const runner = new RunnerClient(`http://127.0.0.1:${task.ports[0]!.host}`);
    await runner.submit(submitBody(['echo pid=$$', 'sleep 60'], 60));
    await runner.run();
    const running = await pullUntil(runner, (collected) => collected.output.includes('pid='));
    const pid = Number(/pid=(\d+)/.exec(running.output)![1]);
    await client.terminateTask('task-2', { timeout: 0 });
    await eventually(() => (processExists(-pid) ? undefined : true), 'the job to be gone');
  });

  it('refuses a duplicate task id with 409 and a bad config with a 400 naming the field', async () => {
    await client.submitTask(taskConfig('task-3'));
    await expect(client.submitTask(taskConfig('task-3'))).rejects.toMatchObject({ statusCode: 409 });
    const error = await client
      .submitTask({ ...taskConfig('task-4'), network_mode: 'overlay' as 'host' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AgentApiError);
    expect((error as AgentApiError).statusCode).toBe(400);
    expect((error as AgentApiError).body).toContain('network_mode');
    await expect(client.submitTask(taskConfig('../escape'))).rejects.toMatchObject({ statusCode: 400 });
  });

  it('answers 404 for an unknown task', async () => {
    expect(await client.getTask('nope')).toBeNull();
    await expect(client.terminateTask('nope')).rejects.toMatchObject({ statusCode: 404 });
    await expect(client.removeTask('nope')).rejects.toMatchObject({ statusCode: 404 });
  });

  it('terminates every task and closes on shutdown', async () => {
    await client.submitTask(taskConfig('task-5'));
    const task = await runningTask('task-5');
    await client.shutdown(true);
    await shim!.closed;
    shim = undefined;
    await expect(client.healthcheck()).rejects.toThrow();
    await expect(new RunnerClient(`http://127.0.0.1:${task.ports[0]!.host}`).healthcheck()).rejects.toThrow();
  });
});
