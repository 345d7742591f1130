/**
 * `type: volume`: a network volume, created (`size`) or registered (`volume_id`; on Kubernetes
 * `claim_name`, a PersistentVolumeClaim, with dstack's `KubernetesVolumeConfiguration` fields).
 */
import * as z from 'zod';
import { resourceNameSchema } from '../models/resource-names.js';
import { configurationBackendSchema } from './backend-type.js';
import { offableDurationSchema } from './duration.js';
import { memorySchema } from './memory.js';
import { strictObject, stringMapSchema } from './schema-helpers.js';

/** The backend whose volumes are PersistentVolumeClaims. */
const KUBERNETES = 'kubernetes';
/** The fields only a Kubernetes volume has. */
const KUBERNETES_FIELDS = ['claim_name', 'storage_class_name', 'access_modes', 'read_only'] as const;
/** What a Kubernetes volume has instead of another backend's field. */
const NOT_ON_KUBERNETES: Record<string, string> = {
  volume_id: "use 'claim_name' to register an existing PersistentVolumeClaim",
  availability_zone: 'a Kubernetes volume is in a cluster (its region), not a zone',
};
/** What the PersistentVolumeClaim created asks for, and so what a registered claim already has. */
const CLAIM_CREATION_FIELDS = ['size', 'storage_class_name', 'access_modes'] as const;

/** The access modes of a PersistentVolumeClaim (`spec.accessModes`). */
const accessModeSchema = z.enum(['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'], {
  error: 'expected ReadWriteOnce, ReadOnlyMany, ReadWriteMany or ReadWriteOncePod',
});

/** A volume configuration. */
export const volumeConfigurationSchema = strictObject({
  type: z.literal('volume'),
  /** Volume name (lowercase letters, digits, dashes). Default: generated. */
  name: resourceNameSchema.optional(),
  /** Backend that holds the volume, e.g. `aws`. Required. */
  backend: configurationBackendSchema,
  /**
   * Region of the volume. Required, except on Kubernetes: there the context of the backend's
   * `contexts`, default "" (dstack's), the kubeconfig's current context when `contexts` is not set.
   */
  region: z.string().default(''),
  /** Availability zone. Default: chosen by the backend. Not on Kubernetes. */
  availability_zone: z.string().min(1).optional(),
  /** Size in GB; required to create a new volume. */
  size: memorySchema.optional(),
  /** Cloud ID of an existing volume to register. Not on Kubernetes (`claim_name`). */
  volume_id: z.string().min(1).optional(),
  /** Kubernetes: the existing PersistentVolumeClaim to register instead of creating one. */
  claim_name: z.string().min(1).optional(),
  /** Kubernetes: the StorageClass of the claim created. Default: the cluster's default class. */
  storage_class_name: z.string().min(1).optional(),
  /** Kubernetes: the access modes the claim created asks for. Default `[ReadWriteOnce]`. */
  access_modes: z.array(accessModeSchema).min(1).optional(),
  /** Kubernetes: mount the volume read-only. Default `false`. */
  read_only: z.boolean().optional(),
  /** Delete the volume after it is unused this long (seconds), or `off`. Default `off`. */
  auto_cleanup_duration: offableDurationSchema,
  /** Tags propagated to the cloud volume. */
  tags: stringMapSchema.optional(),
}).superRefine((volume, ctx) => {
  const kubernetes = volume.backend === KUBERNETES;
  if (!kubernetes && volume.region === '') {
    ctx.addIssue({ code: 'custom', message: "required field 'region' is missing", path: ['region'] });
  }
  for (const field of KUBERNETES_FIELDS) {
    if (!kubernetes && volume[field] !== undefined) {
      ctx.addIssue({ code: 'custom', message: `only a kubernetes volume has '${field}'`, path: [field] });
    }
  }
  if (kubernetes) {
    for (const [field, instead] of Object.entries(NOT_ON_KUBERNETES)) {
      if (volume[field as keyof typeof volume] !== undefined) {
        ctx.addIssue({ code: 'custom', message: `not a kubernetes volume field: ${instead}`, path: [field] });
      }
    }
    if (volume.claim_name !== undefined) {
      for (const field of CLAIM_CREATION_FIELDS) {
        if (volume[field] !== undefined) {
          ctx.addIssue({
            code: 'custom',
            message: `'${field}' is for creating a PersistentVolumeClaim: the registered claim '${volume.claim_name}' has its own`,
            path: [field],
          });
        }
      }
    }
  }
  if (volume.size === undefined && externalVolumeId(volume) === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: kubernetes
        ? "either 'size' (to create a PersistentVolumeClaim) or 'claim_name' (to register one) is required"
        : "either 'size' (to create a volume) or 'volume_id' (to register one) is required",
      path: ['size'],
    });
  }
});
export type VolumeConfiguration = z.infer<typeof volumeConfigurationSchema>;

/**
 * The provider's id of the existing volume the configuration registers (`volume_id`, on
 * Kubernetes `claim_name`), or undefined when it creates one (dstack's `external_volume_id`).
 */
export function externalVolumeId(
  configuration: Pick<VolumeConfiguration, 'volume_id' | 'claim_name'>,
): string | undefined {
  return configuration.volume_id ?? configuration.claim_name;
}
