import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  DSTACK_RUNNER_HTTP_PORT,
  type TaskConfig,
  type TaskInfo,
  type TaskStatus,
} from '@dstack/core/agent-protocol';
import { type StartedTask, type TaskRuntime, TaskStartError } from '../runtime/task-runtime.js';
import { GpuAllocator } from './gpu-allocator.js';

/** A request that does not fit a task's state (duplicate id, removing a running task). */
export class TaskConflictError extends Error {
  override readonly name = 'TaskConflictError';
}

export class TaskNotFoundError extends Error {
  override readonly name = 'TaskNotFoundError';
}

export interface TerminateOptions {
  /** Default `terminated_by_user`. */
  terminationReason?: string | null;
  terminationMessage?: string | null;
  /** Seconds between SIGTERM and SIGKILL. Default 10. */
  timeoutSeconds?: number | null;
}

/** Grace period of a terminate request without `timeout`. */
const DEFAULT_TERMINATE_TIMEOUT_SECONDS = 10;

interface Task {
  readonly config: TaskConfig;
  readonly homeDir: string;
  status: TaskStatus;
  terminationReason: string | null;
  terminationMessage: string | null;
  started: StartedTask | undefined;
  /** Settles (never rejects) when the runtime's start is over, successful or not. */
  starting: Promise<void>;
  terminating: Promise<void> | undefined;
}

/**
 * The shim's tasks and their lifecycle: pending → preparing → (pulling → creating) → running →
 * terminated. Starting happens in the background; terminate waits for the task to be stopped.
 */
export class TaskManager {
  private readonly tasks = new Map<string, Task>();

  constructor(
    private readonly runtime: TaskRuntime,
    /** Each task's files go to `<tasksDir>/<task id>`. */
    private readonly tasksDir: string,
    /** Hands each task GPUs no other task holds. Default: the host's GPUs are unknown. */
    private readonly gpus: GpuAllocator = new GpuAllocator([]),
    /** The token each task's runner requires; default none (the runners' APIs are open). */
    private readonly runnerTokenFor: (taskId: string) => string | null = () => null,
  ) {}

  list(): Array<{ id: string; status: TaskStatus }> {
    return [...this.tasks.values()].map((task) => ({ id: task.config.id, status: task.status }));
  }

  get(id: string): TaskInfo | undefined {
    const task = this.tasks.get(id);
    if (task === undefined) {
      return undefined;
    }
    return {
      id,
      status: task.status,
      termination_reason: task.terminationReason,
      termination_message: task.terminationMessage,
      ports:
        task.started !== undefined && task.status !== 'terminated'
          ? [{ container: DSTACK_RUNNER_HTTP_PORT, host: task.started.runnerPort }]
          : [],
      container_name: task.started?.containerName ?? null,
      container_id: task.started?.containerId ?? null,
    };
  }

  /** Registers the task and starts it in the background. */
  submit(config: TaskConfig): void {
    if (this.tasks.has(config.id)) {
      throw new TaskConflictError(`task ${config.id} already exists`);
    }
    const task: Task = {
      config,
      homeDir: join(this.tasksDir, config.id),
      status: 'pending',
      terminationReason: null,
      terminationMessage: null,
      started: undefined,
      starting: Promise.resolve(),
      terminating: undefined,
    };
    this.tasks.set(config.id, task);
    task.starting = this.start(task);
  }

  /** Stops the task's runner and marks it terminated; waits for a start in progress first. Idempotent. */
  async terminate(id: string, options: TerminateOptions = {}): Promise<void> {
    const task = this.require(id);
    if (task.status === 'terminated') {
      return;
    }
    task.terminating ??= (async () => {
      await task.starting;
      await task.started?.stop(options.timeoutSeconds ?? DEFAULT_TERMINATE_TIMEOUT_SECONDS);
      if (task.status !== 'terminated') {
        this.markTerminated(
          task,
          options.terminationReason ?? 'terminated_by_user',
          options.terminationMessage ?? null,
        );
      }
    })();
    // A stop that failed (the daemon did not answer) leaves the task as it was: a later
    // terminate tries again, as with dstack's shim, instead of getting this failure forever.
    task.terminating.catch(() => {
      task.terminating = undefined;
    });
    return task.terminating;
  }

  /** Frees a terminated task (its container and files) and forgets it. */
  async remove(id: string): Promise<void> {
    const task = this.require(id);
    if (task.status !== 'terminated') {
      throw new TaskConflictError(`task ${id} is ${task.status}: terminate it before removing it`);
    }
    await task.started?.remove();
    await rm(task.homeDir, { recursive: true, force: true });
    this.tasks.delete(id);
  }

  /** Terminates every task (as the server asked, or because the shim stops). */
  async terminateAll(options: TerminateOptions): Promise<void> {
    await Promise.all([...this.tasks.keys()].map((id) => this.terminate(id, options)));
  }

  private require(id: string): Task {
    const task = this.tasks.get(id);
    if (task === undefined) {
      throw new TaskNotFoundError(`task ${id} not found`);
    }
    return task;
  }

  private async start(task: Task): Promise<void> {
    // Let submit answer before the runtime starts working.
    await Promise.resolve();
    task.status = 'preparing';
    let gpuIds: readonly string[] | null;
    try {
      gpuIds = this.gpus.acquire(task.config.id, task.config.gpu);
    } catch (error) {
      this.markTerminated(task, 'executor_error', error instanceof Error ? error.message : String(error));
      return;
    }
    try {
      const events = {
        onStatus: (status: 'preparing' | 'pulling' | 'creating') => {
          if (task.status !== 'terminated') {
            task.status = status;
          }
        },
      };
      const started = await this.runtime.start(
        task.config,
        task.homeDir,
        events,
        { gpuIds },
        { runnerToken: this.runnerTokenFor(task.config.id) },
      );
      task.started = started;
      task.status = 'running';
      started.exited.then(({ exitCode }) => {
        // An exit caused by terminate is reported by terminate.
        if (task.terminating === undefined && task.status === 'running') {
          if (exitCode === 0) {
            this.markTerminated(task, 'done_by_runner', null);
          } else {
            this.markTerminated(task, 'container_exited_with_error', `exit status ${exitCode}`);
          }
        }
      });
    } catch (error) {
      const reason = error instanceof TaskStartError ? error.reason : 'creating_container_error';
      this.markTerminated(task, reason, error instanceof Error ? error.message : String(error));
    }
  }

  /** A terminated task's runner is stopped: its GPUs go back to the other tasks. */
  private markTerminated(task: Task, reason: string, message: string | null): void {
    this.gpus.release(task.config.id);
    task.status = 'terminated';
    task.terminationReason = reason;
    task.terminationMessage = message;
  }
}
