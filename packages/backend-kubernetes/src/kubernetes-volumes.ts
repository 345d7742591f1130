/**
 * Volumes on Kubernetes, as dstack's backend has them: a network volume is a
 * PersistentVolumeClaim in the backend's namespace (created from `size`, `storage_class_name` and
 * `access_modes`, or an existing one registered by `claim_name`), mounted into the job pod by the
 * claim; an instance path is a `hostPath` volume of the node. The cluster binds and attaches
 * claims itself, so the server neither attaches nor detaches them (`attachable: false`).
 */
import {
  BackendError,
  generateUniqueBackendName,
  type MountPoint,
  mergeTags,
  type Volume,
  type VolumeProvisioningData,
} from '@dstack/core';
import type { KubernetesObject } from './kubernetes-api.js';
import { KUBERNETES_BACKEND_TYPE } from './kubernetes-config.js';
import { baseLabels, validLabels } from './kubernetes-labels.js';
import { parseQuantity } from './kubernetes-quantity.js';

/** Object names are DNS subdomains, but a claim's name is also a label value: 63 characters. */
const CLAIM_NAME_MAX = 63;
/** dstack's default `access_modes`. */
const DEFAULT_ACCESS_MODES = ['ReadWriteOnce'];

/**
 * The name of the claim `createVolume` makes for `volume`: dstack's `dstack-{project}-{name}-…`
 * with a suffix derived from the volume's id, so a repeated creation finds the claim the first made.
 */
export function claimNameOf(volume: Pick<Volume, 'id' | 'name' | 'project_name'>): string {
  const name = generateUniqueBackendName(volume.project_name, volume.name, {
    seed: volume.id,
    maxLength: CLAIM_NAME_MAX,
  });
  return name.toLowerCase().replace(/[^a-z0-9-]/g, '-');
}

/** The PersistentVolumeClaim for a volume created from its configuration's `size`. */
export function persistentVolumeClaim(volume: Volume, name: string): KubernetesObject {
  const { configuration } = volume;
  if (configuration.size == null) {
    throw new BackendError(`volume ${volume.name}: size is required to create a PersistentVolumeClaim`);
  }
  const labels = mergeTags(
    baseLabels('volume', name, volume.project_name, { name: volume.name, user: volume.user }),
    null,
    validLabels(configuration.tags ?? {}),
  );
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, labels },
    spec: {
      accessModes: configuration.access_modes ?? DEFAULT_ACCESS_MODES,
      ...(configuration.storage_class_name ? { storageClassName: configuration.storage_class_name } : {}),
      resources: { requests: { storage: `${configuration.size}Gi` } },
    },
  };
}

/** What the server stores of a claim: its name and size in GiB, attached by the cluster itself. */
export function claimProvisioningData(name: string, sizeGb: number): VolumeProvisioningData {
  return {
    backend: KUBERNETES_BACKEND_TYPE,
    volume_id: name,
    size_gb: sizeGb,
    attachable: false,
    detachable: false,
  };
}

/**
 * The size of a registered claim in whole GiB: its bound capacity, else what it requests (a claim
 * still pending has no capacity yet), as dstack's `register_volume`.
 */
export function claimSizeGb(claim: KubernetesObject): number {
  const name = claim.metadata?.name ?? '';
  const quantity: string | undefined =
    claim.status?.capacity?.storage ?? claim.spec?.resources?.requests?.storage;
  if (quantity === undefined) {
    throw new BackendError(`Failed to detect PersistentVolumeClaim ${name} capacity`);
  }
  return Math.floor(parseQuantity(quantity) / 2 ** 30);
}

/** A pod's `volumes` and its container's `volumeMounts` for the job's mount points. */
export interface PodVolumes {
  volumes: unknown[];
  volumeMounts: unknown[];
}

/**
 * The job's mount points as pod volumes: each network mount point by the claim of the one of its
 * volumes the server chose (`RunJobParams.volumes`), read-only when the volume says so; each
 * instance path as a `hostPath` of the node, made when missing (dstack's `DirectoryOrCreate`).
 * A mount point none of whose volumes was given is a `BackendError`.
 */
export function podVolumes(mountPoints: readonly MountPoint[], volumes: readonly Volume[]): PodVolumes {
  const result: PodVolumes = { volumes: [], volumeMounts: [] };
  mountPoints.forEach((mount, index) => {
    if ('instance_path' in mount) {
      const name = `host-path-${index}`;
      result.volumes.push({ name, hostPath: { path: mount.instance_path, type: 'DirectoryOrCreate' } });
      result.volumeMounts.push({ name, mountPath: mount.path });
      return;
    }
    const names = [mount.name].flat();
    const volume = volumes.find((candidate) => names.includes(candidate.name));
    const claimName = volume?.volume_id ?? volume?.provisioning_data?.volume_id;
    if (!volume || !claimName) {
      throw new BackendError(
        `no PersistentVolumeClaim given for the volume ${names.join(' or ')} at ${mount.path}`,
      );
    }
    const name = `pvc-${index}`;
    const readOnly = volume.configuration.read_only === true;
    result.volumes.push({ name, persistentVolumeClaim: { claimName, ...(readOnly ? { readOnly } : {}) } });
    result.volumeMounts.push({ name, mountPath: mount.path, ...(readOnly ? { readOnly } : {}) });
  });
  return result;
}
