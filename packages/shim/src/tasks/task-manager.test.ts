import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TaskConfig, TaskConfigSchema } from '@dstack/core/agent-protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type StartedTask,
  type TaskDevices,
  type TaskEvents,
  type TaskRuntime,
  TaskStartError,
} from '../runtime/task-runtime.js';
import { eventually } from '../testing/shim-test.test.helpers.js';
import { GpuAllocator } from './gpu-allocator.js';
import { TaskConflictError, TaskManager, TaskNotFoundError } from './task-manager.js';

/** A runtime whose starts the test settles by hand, to observe every intermediate status. */
class ScriptedRuntime implements TaskRuntime {
  readonly name = 'process';
  readonly starts: Array<{
    task: TaskConfig;
    events: TaskEvents;
    devices: TaskDevices | undefined;
    succeed(): ScriptedTask;
    fail(error: Error): void;
  }> = [];

  start(
    task: TaskConfig,
    taskHomeDir: string,
    events: TaskEvents,
    devices?: TaskDevices,
  ): Promise<StartedTask> {
    mkdirSync(taskHomeDir, { recursive: true });
    return new Promise((resolve, reject) => {
      this.starts.push({
        task,
        events,
        devices,
        succeed: () => {
          const started = new ScriptedTask();
          resolve(started);
          return started;
        },
        fail: reject,
      });
    });
  }
}

class ScriptedTask implements StartedTask {
  readonly runnerPort = 40123;
  readonly containerName = 'scripted';
  readonly containerId = 'scripted-id';
  readonly stopCalls: number[] = [];
  removed = false;
  /** When set, the next stop fails with it (a daemon that does not answer). */
  stopFailure: Error | undefined;
  private exit: (result: { exitCode: number | null }) => void = () => undefined;
  readonly exited = new Promise<{ exitCode: number | null }>((resolve) => {
    this.exit = resolve;
  });

  async stop(timeoutSeconds: number): Promise<void> {
    this.stopCalls.push(timeoutSeconds);
    const failure = this.stopFailure;
    this.stopFailure = undefined;
    if (failure) throw failure;
    this.exit({ exitCode: null });
  }

  async remove(): Promise<void> {
    this.removed = true;
  }

  exitByItself(exitCode: number): void {
    this.exit({ exitCode });
  }
}

let tasksDir: string;
let runtime: ScriptedRuntime;
let manager: TaskManager;

beforeEach(() => {
  tasksDir = mkdtempSync(join(tmpdir(), 'dstack-shim-tasks-'));
  runtime = new ScriptedRuntime();
  manager = new TaskManager(runtime, tasksDir);
});

afterEach(() => {
  rmSync(tasksDir, { recursive: true, force: true });
});

function submit(id: string, gpu = 0): void {
  manager.submit(TaskConfigSchema.parse({ id, name: id, image_name: 'ubuntu', gpu }));
}

async function nextStart() {
  return eventually(() => runtime.starts.shift(), 'the runtime to be asked to start');
}

describe('TaskManager', () => {
  it('walks a task through the statuses the runtime reports, then running with the runner port', async () => {
    submit('a');
    expect(manager.get('a')?.status).toBe('pending');
    const start = await nextStart();
    expect(manager.get('a')?.status).toBe('preparing');
    start.events.onStatus('pulling');
    expect(manager.get('a')?.status).toBe('pulling');
    start.events.onStatus('creating');
    start.succeed();
    await eventually(() => (manager.get('a')?.status === 'running' ? true : undefined), 'running');
    expect(manager.get('a')).toEqual({
      id: 'a',
      status: 'running',
      termination_reason: null,
      termination_message: null,
      ports: [{ container: 10999, host: 40123 }],
      container_name: 'scripted',
      container_id: 'scripted-id',
    });
    expect(manager.list()).toEqual([{ id: 'a', status: 'running' }]);
  });

  it('refuses a second task with the same id', () => {
    submit('a');
    expect(() => submit('a')).toThrow(TaskConflictError);
  });

  it('terminates a failed start with the runtime’s reason', async () => {
    submit('a');
    (await nextStart()).fail(new TaskStartError('ports_binding_failed', 'port 10999 is taken'));
    await eventually(() => (manager.get('a')?.status === 'terminated' ? true : undefined), 'terminated');
    expect(manager.get('a')).toMatchObject({
      termination_reason: 'ports_binding_failed',
      termination_message: 'port 10999 is taken',
      ports: [],
    });
  });

  it('reports a runner that exits by itself', async () => {
    submit('a');
    const started = (await nextStart()).succeed();
    await eventually(() => (manager.get('a')?.status === 'running' ? true : undefined), 'running');
    started.exitByItself(2);
    await eventually(() => (manager.get('a')?.status === 'terminated' ? true : undefined), 'terminated');
    expect(manager.get('a')).toMatchObject({
      termination_reason: 'container_exited_with_error',
      termination_message: 'exit status 2',
    });
  });

  it('terminates with the given reason and timeout, once, then removes the task and its files', async () => {
    submit('a');
    const started = (await nextStart()).succeed();
    await eventually(() => (manager.get('a')?.status === 'running' ? true : undefined), 'running');
    await expect(manager.remove('a')).rejects.toThrow(TaskConflictError);
    await Promise.all([
      manager.terminate('a', {
        terminationReason: 'terminated_by_server',
        terminationMessage: 'bye',
        timeoutSeconds: 3,
      }),
      manager.terminate('a'),
    ]);
    await manager.terminate('a');
    expect(started.stopCalls).toEqual([3]);
    expect(manager.get('a')).toMatchObject({
      status: 'terminated',
      termination_reason: 'terminated_by_server',
      termination_message: 'bye',
    });
    expect(existsSync(join(tasksDir, 'a'))).toBe(true);
    await manager.remove('a');
    expect(started.removed).toBe(true);
    expect(existsSync(join(tasksDir, 'a'))).toBe(false);
    expect(manager.get('a')).toBeUndefined();
    await expect(manager.terminate('a')).rejects.toThrow(TaskNotFoundError);
  });

  it('lets a terminate that failed to stop the runner be retried, and frees the GPUs then', async () => {
    manager = new TaskManager(runtime, tasksDir, new GpuAllocator(['0']));
    submit('a', 1);
    const started = (await nextStart()).succeed();
    await eventually(() => (manager.get('a')?.status === 'running' ? true : undefined), 'running');
    started.stopFailure = new Error('the Docker daemon did not answer');
    await expect(manager.terminate('a', { timeoutSeconds: 1 })).rejects.toThrow('did not answer');
    expect(manager.get('a')?.status).toBe('running');

    await manager.terminate('a', { timeoutSeconds: 2 });
    expect(started.stopCalls).toEqual([1, 2]);
    expect(manager.get('a')).toMatchObject({
      status: 'terminated',
      termination_reason: 'terminated_by_user',
    });
    submit('b', 1);
    expect((await nextStart()).devices).toEqual({ gpuIds: ['0'] });
  });

  it('waits for a start in progress before stopping it', async () => {
    submit('a');
    const start = await nextStart();
    const terminated = manager.terminate('a', { timeoutSeconds: 0 });
    const started = start.succeed();
    await terminated;
    expect(started.stopCalls).toEqual([0]);
    expect(manager.get('a')).toMatchObject({
      status: 'terminated',
      termination_reason: 'terminated_by_user',
    });
  });

  it('gives concurrent tasks different GPUs of the host, and frees them when a task ends', async () => {
    manager = new TaskManager(runtime, tasksDir, new GpuAllocator(['0', '1']));
    submit('a', 1);
    submit('b', 1);
    const first = await nextStart();
    const second = await nextStart();
    expect([first.devices, second.devices]).toEqual([{ gpuIds: ['0'] }, { gpuIds: ['1'] }]);
    first.succeed();
    second.succeed();
    await eventually(() => (manager.get('b')?.status === 'running' ? true : undefined), 'running');

    submit('c', 1);
    await eventually(() => (manager.get('c')?.status === 'terminated' ? true : undefined), 'terminated');
    expect(manager.get('c')).toMatchObject({
      termination_reason: 'executor_error',
      termination_message: "the task asks for 1 GPUs but 0 of the host's 2 are free",
    });
    expect(runtime.starts).toHaveLength(0);

    await manager.terminate('a', { timeoutSeconds: 0 });
    submit('d', 1);
    expect((await nextStart()).devices).toEqual({ gpuIds: ['0'] });
  });
});
