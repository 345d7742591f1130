/** Which of a project's backends hold volumes (the `volumes` capability), and the Compute of one. */
import { type ComputeWithVolumes, hasCapability } from '@dstack/core';
import type { ProjectBackend } from '../backends/registry.js';
import type { AppContext } from '../context.js';

/** The project's backend of `type` as a volume Compute, or why there is none (a sentence). */
export type VolumeCompute = { compute: ComputeWithVolumes } | { refusal: string };

export function volumeComputeAmong(backends: readonly ProjectBackend[], type: string): VolumeCompute {
  const backend = backends.find((candidate) => candidate.type === type);
  if (!backend) {
    const configured = backends.map((candidate) => candidate.type).join(', ') || 'none';
    return { refusal: `backend ${type} is not configured in the project (configured: ${configured})` };
  }
  if (!hasCapability(backend.compute, 'volumes')) {
    const withVolumes = backends
      .filter((candidate) => hasCapability(candidate.compute, 'volumes'))
      .map((candidate) => candidate.type);
    return {
      refusal: `volumes are not supported by the ${type} backend; the project's backends with volumes: ${withVolumes.join(', ') || 'none'}`,
    };
  }
  return { compute: backend.compute };
}

export async function volumeComputeOf(
  app: AppContext,
  projectId: string,
  type: string,
): Promise<VolumeCompute> {
  return volumeComputeAmong(await app.backends.getProjectBackends(projectId), type);
}
