/**
 * What a job runs on, the one thing its command line depends on besides its configuration
 * (job-commands.ts): a container of its image (dstack's only case: a shim's Docker, a container
 * backend's rental or pod) gets dstack's command line with the base image's set-up; a plain
 * process on its host gets the user's commands alone, because no image of dstack's is there to
 * set up (no `sudo`, no `uv`, no /dstack).
 */
import type { Compute } from '@dstack/core';
import type { TaskInfo } from '@dstack/core/agent-protocol';

export type JobRuntime = 'container' | 'process';

/**
 * The job's runtime: a process when its backend runs no images at all (`Compute.imageRefusal`:
 * a Slurm allocation, which has no shim, or the local backend's process runtime), or when its
 * instance does not (a host without Docker, whose shim chose its process runtime: the task the
 * shim started has no container); else a container. `task` is the shim's task, null on a backend
 * without a shim; `backend` is null when the backend is no longer configured.
 */
export function jobRuntimeOf(
  backend: Pick<Compute, 'imageRefusal'> | null,
  task: Pick<TaskInfo, 'container_id'> | null,
): JobRuntime {
  if (backend?.imageRefusal?.() != null) return 'process';
  if (task !== null && task.container_id === null) return 'process';
  return 'container';
}
