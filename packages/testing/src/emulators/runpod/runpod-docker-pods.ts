/**
 * The containers RunPod pods run: the toolkit's Docker rental containers
 * (`hosts/docker-rental-containers.ts`) labelled `dev.dstack.runpod-pod`, on the network
 * `dstack-runpod-pods`.
 */
import { DockerRentalContainers } from '../hosts/docker-rental-containers.js';

/** The bridge network the pods share by default. */
export const DEFAULT_RUNPOD_POD_NETWORK = 'dstack-runpod-pods';

export class DockerRunpodPods extends DockerRentalContainers {
  constructor(options: { network?: string } = {}) {
    super({
      kind: 'runpod-pod',
      namePrefix: 'runpod',
      network: options.network ?? DEFAULT_RUNPOD_POD_NETWORK,
    });
  }
}
