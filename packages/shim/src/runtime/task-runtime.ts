import type { TaskConfig } from '../api/schemas.js';

export interface TaskEvents {
  /** Status changes the runtime reports while starting (pulling, creating). */
  onStatus(status: 'preparing' | 'pulling' | 'creating'): void;
}

export interface TaskRuntime {
  readonly name: 'process' | 'docker';
  /** Starts the task's runner and resolves once it answers its healthcheck. Throws TaskStartError with a reason ('creating_container_error', 'ports_binding_failed', ...). */
  start(task: TaskConfig, taskHomeDir: string, events: TaskEvents): Promise<StartedTask>;
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
