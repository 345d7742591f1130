/**
 * The volumes of a run's jobs, as planning, applying and placing them see them: each job's
 * volumes must exist and be active (a 400 at plan and apply, `volume_error` for a job that
 * finds them gone later), and narrow where the job may run (`placementForVolumes`).
 */
import { type JobSpec, type RunConfiguration, ServerClientError, type Volume } from '@dstack/core';
import type { ProjectBackend } from '../backends/registry.js';
import type { AppContext } from '../context.js';
import {
  JobVolumeError,
  placementForVolumes,
  projectHasSshFleetHosts,
  type ResolvedJobVolumes,
  resolveJobVolumes,
} from '../volumes/job-volumes.js';
import { volumesOf } from '../volumes/volume-models.js';

/** Where the job may run given its volumes, and the volumes themselves. */
export interface JobVolumePlacement {
  configuration: RunConfiguration;
  resolved: ResolvedJobVolumes;
}

/** The job's placement with its volumes; throws `JobVolumeError` saying why it has none. */
export async function jobVolumePlacement(
  app: AppContext,
  projectId: string,
  configuration: RunConfiguration,
  jobSpec: JobSpec,
  backends: readonly ProjectBackend[],
): Promise<JobVolumePlacement> {
  const resolved = await resolveJobVolumes(app, projectId, jobSpec);
  const needsPlacement = resolved.mounts.length > 0 || resolved.instanceMounts.length > 0;
  const sshHosts = needsPlacement && (await projectHasSshFleetHosts(app, projectId));
  return { configuration: placementForVolumes(configuration, resolved, backends, sshHosts), resolved };
}

/**
 * The placement of each job for `runs/get_plan` and `runs/apply`: a job whose volumes are
 * missing, not active, or mountable nowhere is a 400 naming `volumes`, before anything is stored.
 */
export async function planJobVolumes(
  app: AppContext,
  projectId: string,
  configuration: RunConfiguration,
  jobSpecs: readonly JobSpec[],
  backends: readonly ProjectBackend[],
): Promise<JobVolumePlacement[]> {
  try {
    return await Promise.all(
      jobSpecs.map((jobSpec) => jobVolumePlacement(app, projectId, configuration, jobSpec, backends)),
    );
  } catch (error) {
    if (error instanceof JobVolumeError) {
      throw new ServerClientError(`volumes: ${error.message}`, {
        fields: [['run_spec', 'configuration', 'volumes']],
      });
    }
    throw error;
  }
}

/** The volumes a launch hands the backend (`RunJobParams.volumes`): the first of each mount point's. */
export async function launchVolumesOf(app: AppContext, resolved: ResolvedJobVolumes): Promise<Volume[]> {
  const first = resolved.mounts.flatMap((mount) => mount.volumes.slice(0, 1));
  return volumesOf(app, first);
}
