import { mkdir } from 'node:fs/promises';
import { RunnerClient, startRunner } from '@dstack/runner';
import type { TaskConfig } from '../../api/schemas.js';
import type { StartedTask, TaskEvents, TaskRuntime } from '../task-runtime.js';
import { TaskStartError } from '../task-runtime.js';

export interface ProcessRuntimeOptions {
  /** The environment the tasks' jobs inherit (each task's `env` is added). Default: the shim's `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
}

/**
 * Runs each task's runner inside the shim's own process, and its job as a child process of the
 * shim's host. There is no container: `image_name`, resources, volumes and users are ignored,
 * so this runtime suits local machines and tests, not isolation.
 */
export function createProcessRuntime(options: ProcessRuntimeOptions = {}): TaskRuntime {
  return {
    name: 'process',
    async start(task: TaskConfig, taskHomeDir: string, _events: TaskEvents): Promise<StartedTask> {
      await mkdir(taskHomeDir, { recursive: true });
      let runner: Awaited<ReturnType<typeof startRunner>>;
      try {
        runner = await startRunner({
          port: 0,
          homeDir: taskHomeDir,
          env: { ...(options.env ?? process.env), ...task.env },
        });
      } catch (error) {
        throw new TaskStartError('executor_error', `the runner did not start: ${messageOf(error)}`);
      }
      try {
        await new RunnerClient(runner.url, { timeoutMs: 10_000 }).healthcheck();
      } catch (error) {
        await runner.close();
        throw new TaskStartError('executor_error', `the runner does not answer: ${messageOf(error)}`);
      }
      return startedProcessTask(runner);
    },
  };
}

function startedProcessTask(runner: Awaited<ReturnType<typeof startRunner>>): StartedTask {
  let markExited: (exit: { exitCode: number | null }) => void = () => undefined;
  const exited = new Promise<{ exitCode: number | null }>((resolve) => {
    markExited = resolve;
  });
  let stopping: Promise<void> | undefined;
  const stop = (timeoutSeconds: number): Promise<void> => {
    stopping ??= (async () => {
      await runner.stopJob(timeoutSeconds);
      await runner.close();
      // An in-process runner never exits by itself; it is gone once stopped.
      markExited({ exitCode: null });
    })();
    return stopping;
  };
  return {
    runnerPort: runner.port,
    containerName: null,
    containerId: null,
    stop,
    remove: () => stop(0),
    exited,
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
