import * as z from 'zod';
import { BackendTypeSchema } from './backend-type.js';
import { VolumeStatusSchema } from './statuses.js';

export const VolumeProvisioningDataSchema = z.object({
  backend: BackendTypeSchema.nullish(),
  /** The provider's volume id. */
  volume_id: z.string(),
  size_gb: z.number().int().nonnegative(),
  availability_zone: z.string().nullish(),
  /** USD per month. */
  price: z.number().nullish(),
  /** Whether the server must attach/detach the volume itself (else `runJob` attaches it). */
  attachable: z.boolean().default(true),
  detachable: z.boolean().default(true),
  /** Backend-specific data, a JSON string. */
  backend_data: z.string().nullish(),
});
export type VolumeProvisioningData = z.output<typeof VolumeProvisioningDataSchema>;

export const VolumeAttachmentDataSchema = z.object({
  /** The device the volume appeared as (`/dev/sdf`), when the provider says. */
  device_name: z.string().nullish(),
});
export type VolumeAttachmentData = z.output<typeof VolumeAttachmentDataSchema>;

/**
 * The volume configuration as a backend sees it. The full per-backend schemas
 * live in `configuration/`; unknown fields are kept here for backend-specific keys.
 */
export const VolumeConfigurationForComputeSchema = z.looseObject({
  type: z.literal('volume').default('volume'),
  name: z.string().nullish(),
  backend: BackendTypeSchema,
  region: z.string(),
  availability_zone: z.string().nullish(),
  /** GB; required when creating a volume. */
  size: z.number().nullish(),
  /** Set when registering an existing volume. */
  volume_id: z.string().nullish(),
  /** Kubernetes: the PersistentVolumeClaim registered (its `volume_id`). */
  claim_name: z.string().nullish(),
  /** Kubernetes: the StorageClass of the claim created; null: the cluster's default. */
  storage_class_name: z.string().nullish(),
  /** Kubernetes: the access modes of the claim created; null: `[ReadWriteOnce]`. */
  access_modes: z.array(z.string()).nullish(),
  /** Kubernetes: mount read-only. */
  read_only: z.boolean().nullish(),
  tags: z.record(z.string(), z.string()).nullish(),
});
export type VolumeConfigurationForCompute = z.output<typeof VolumeConfigurationForComputeSchema>;

export const VolumeInstanceSchema = z.object({
  name: z.string(),
  fleet_name: z.string().nullish(),
  instance_num: z.number().int(),
  instance_id: z.string().nullish(),
});

export const VolumeAttachmentSchema = z.object({
  instance: VolumeInstanceSchema,
  attachment_data: VolumeAttachmentDataSchema.nullish(),
});
export type VolumeAttachment = z.output<typeof VolumeAttachmentSchema>;

/** A volume as the API returns it and as `ComputeWithVolumes` methods receive it. */
export const VolumeSchema = z.object({
  id: z.string(),
  name: z.string(),
  user: z.string().default(''),
  project_name: z.string(),
  configuration: VolumeConfigurationForComputeSchema,
  external: z.boolean(),
  created_at: z.string(),
  last_processed_at: z.string().nullish(),
  status: VolumeStatusSchema,
  status_message: z.string().nullish(),
  deleted: z.boolean().default(false),
  volume_id: z.string().nullish(),
  provisioning_data: VolumeProvisioningDataSchema.nullish(),
  attachments: z.array(VolumeAttachmentSchema).nullish(),
  /** Deprecated in dstack in favour of `attachments`. */
  attachment_data: VolumeAttachmentDataSchema.nullish(),
  deleted_at: z.string().nullish(),
  /** USD spent on the volume so far (its monthly price over 30-day months, as dstack). */
  cost: z.number().default(0),
});
export type Volume = z.output<typeof VolumeSchema>;

/** `/api/project/{p}/volumes/get`. */
export const GetVolumeRequestSchema = z.object({ name: z.string() });
/** `/api/project/{p}/volumes/create`: the configuration is validated by the server (`volumeConfigurationSchema`). */
export const CreateVolumeRequestSchema = z.object({ configuration: z.looseObject({ type: z.string() }) });
/** `/api/project/{p}/volumes/delete`. */
export const DeleteVolumesRequestSchema = z.object({ names: z.array(z.string()).min(1) });
/** `/api/volumes/list`: every project the user may see, newest first, paged by `prev_created_at` and `prev_id`. */
export const ListVolumesRequestSchema = z.object({
  project_name: z.string().nullish(),
  only_active: z.boolean().default(false),
  prev_created_at: z.string().nullish(),
  prev_id: z.string().nullish(),
  limit: z.number().int().min(0).max(100).default(100),
  ascending: z.boolean().default(false),
});
