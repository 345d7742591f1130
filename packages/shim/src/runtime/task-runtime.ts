import type { TaskConfig } from '@dstack/core/agent-protocol';

export interface TaskEvents {
  /** Status changes the runtime reports while starting (pulling, creating). */
  onStatus(status: 'preparing' | 'pulling' | 'creating'): void;
}

/** The host devices the shim assigned to a task. */
export interface TaskDevices {
  /**
   * The host GPUs (NVIDIA indices) the task holds and alone may use; null when the shim does
   * not know the host's GPUs, and the runtime hands the task's `gpu` count on as is.
   */
  readonly gpuIds: readonly string[] | null;
}

/** How the task's runner is protected. */
export interface TaskAccess {
  /** The token the task's runner requires (`Authorization: Bearer`); null: its API is open. */
  readonly runnerToken: string | null;
}

export interface TaskRuntime {
  readonly name: 'process' | 'docker';
  /**
   * Starts the task's runner and resolves once it answers its healthcheck. Throws TaskStartError with a reason ('creating_container_error', 'ports_binding_failed', ...).
   * `devices`: what the task holds of the host; default none assigned (`gpuIds` null).
   * `access`: the runner's token; default none (`runnerToken` null).
   */
  start(
    task: TaskConfig,
    taskHomeDir: string,
    events: TaskEvents,
    devices?: TaskDevices,
    access?: TaskAccess,
  ): Promise<StartedTask>;
}

export interface StartedTask {
  /** The runner's HTTP port, reachable on the shim's host. */
  readonly runnerPort: number;
  readonly containerName: string | null;
  readonly containerId: string | null;
  /** SIGTERM (docker stop) with `timeoutSeconds` grace, then kill. Idempotent. */
  stop(timeoutSeconds: number): Promise<void>;
  /** Frees everything (container removed). Idempotent. */
  remove(): Promise<void>;
  /** Settles when the runner exits by itself. */
  readonly exited: Promise<{ exitCode: number | null }>;
}

export class TaskStartError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'TaskStartError';
  }
}
