import { isDefaultJobImage, type TaskConfig } from '@dstack/core/agent-protocol';
import { hostJobEnvironment, startRunner } from '@dstack/runner';
import {
  type StartedTask,
  type TaskAccess,
  type TaskDevices,
  type TaskEvents,
  type TaskRuntime,
  TaskStartError,
} from '../task-runtime.js';
import { VOLUME_ERROR } from '../task-volumes.js';

export interface ProcessRuntimeOptions {
  /**
   * The host environment jobs take their basics from (`PATH`, `HOME`, the locale...: the runner's
   * `HOST_JOB_VARIABLES`); each task's `env` is added. Nothing else of it reaches a job: it is
   * the shim's, which holds what started the shim (the server's own variables on the local
   * backend, the login's on an SSH fleet host). Default: the shim's `process.env`.
   */
  hostEnv?: Readonly<Record<string, string | undefined>>;
}

/**
 * Runs each task's runner inside the shim's own process, and its job as a child process of the
 * shim's host. There is no container, so this runtime suits local machines and tests, not
 * isolation: resources are not enforced, a task naming an image other than the default one is
 * refused (its job would not run in that image), and so is a task with volumes or instance
 * mounts to put at a path (there is no container to mount them in; optional instance mounts are
 * left out). The only limit it applies is the GPUs
 * the task holds: its job sees just those (`CUDA_VISIBLE_DEVICES`, `NVIDIA_VISIBLE_DEVICES`);
 * `cpu` and `memory` are not enforced.
 *
 * Users: the task's `container_user` (or the job spec's `user`) is resolved in the host's
 * /etc/passwd and /etc/group. A shim running as root runs the job as that user; a shim running as
 * that very user runs it as is; any other shim fails the job with a message naming `user`,
 * because only root can switch users. No user at all runs the job as the shim's own user.
 */
export function createProcessRuntime(options: ProcessRuntimeOptions = {}): TaskRuntime {
  return {
    name: 'process',
    async start(
      task: TaskConfig,
      taskHomeDir: string,
      _events: TaskEvents,
      devices: TaskDevices = { gpuIds: null },
      access: TaskAccess = { runnerToken: null },
    ): Promise<StartedTask> {
      if (!isDefaultJobImage(task.image_name)) {
        throw new TaskStartError('executor_error', imageRefusal(task.image_name));
      }
      const mounts = mountsRefusal(task);
      if (mounts) throw new TaskStartError(VOLUME_ERROR, mounts);
      let runner: Awaited<ReturnType<typeof startRunner>>;
      // `startRunner` creates the task's home. The runner lives in this process and answers once
      // `startRunner` resolves (it is listening then): no healthcheck round trip is needed first.
      try {
        runner = await startRunner({
          port: 0,
          homeDir: taskHomeDir,
          token: access.runnerToken,
          env: {
            ...hostJobEnvironment(options.hostEnv ?? process.env),
            ...task.env,
            ...visibleGpusEnvironment(devices),
          },
          defaultJobUser: task.container_user === '' ? undefined : task.container_user,
        });
      } catch (error) {
        throw new TaskStartError('executor_error', `the runner did not start: ${messageOf(error)}`);
      }
      return startedProcessTask(runner);
    },
  };
}

/** Why a process runtime cannot run a task with mounts, or null when it has none it must honour. */
export function mountsRefusal(task: TaskConfig): string | null {
  const paths = [
    ...task.volume_mounts.map((mount) => `volume ${mount.name} at ${mount.path}`),
    ...task.instance_mounts
      .filter((mount) => !mount.optional)
      .map((mount) => `${mount.instance_path} at ${mount.path}`),
  ];
  if (paths.length === 0) return null;
  return (
    `volumes (${paths.join(', ')}): this instance runs jobs without containers (its shim has no Docker), ` +
    'so nothing can be mounted at a path in the job; run on an instance with Docker'
  );
}

/** Why a process runtime cannot run `image`: the user learns which field and what would. */
export function imageRefusal(image: string): string {
  return (
    `image ${image}: this instance runs jobs without containers (its shim has no Docker), ` +
    'so the job cannot run in an image; remove `image` or run on an instance with Docker'
  );
}

/**
 * The variables that limit CUDA and NVIDIA's container tools to the task's GPUs (none when it
 * holds none); nothing when the host's GPUs are unknown. They win over the task's own `env`.
 */
export function visibleGpusEnvironment(devices: TaskDevices): Record<string, string> {
  if (devices.gpuIds === null) return {};
  const visible = devices.gpuIds.join(',');
  return { CUDA_VISIBLE_DEVICES: visible, NVIDIA_VISIBLE_DEVICES: visible === '' ? 'void' : visible };
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
