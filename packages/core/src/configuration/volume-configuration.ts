/** `type: volume`: a network volume, created (`size`) or registered (`volume_id`). */
import * as z from 'zod';
import { resourceNameSchema } from '../models/resource-names.js';
import { configurationBackendSchema } from './backend-type.js';
import { offableDurationSchema } from './duration.js';
import { memorySchema } from './memory.js';
import { strictObject, stringMapSchema } from './schema-helpers.js';

/** A volume configuration. */
export const volumeConfigurationSchema = strictObject({
  type: z.literal('volume'),
  /** Volume name (lowercase letters, digits, dashes). Default: generated. */
  name: resourceNameSchema.optional(),
  /** Backend that holds the volume, e.g. `aws`. Required. */
  backend: configurationBackendSchema,
  /** Region of the volume. Required. */
  region: z.string().min(1),
  /** Availability zone. Default: chosen by the backend. */
  availability_zone: z.string().min(1).optional(),
  /** Size in GB; required to create a new volume. */
  size: memorySchema.optional(),
  /** Cloud ID of an existing volume to register. */
  volume_id: z.string().min(1).optional(),
  /** Delete the volume after it is unused this long (seconds), or `off`. Default `off`. */
  auto_cleanup_duration: offableDurationSchema,
  /** Tags propagated to the cloud volume. */
  tags: stringMapSchema.optional(),
}).superRefine((volume, ctx) => {
  if (volume.size === undefined && volume.volume_id === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: "either 'size' (to create a volume) or 'volume_id' (to register one) is required",
      path: ['size'],
    });
  }
});
export type VolumeConfiguration = z.infer<typeof volumeConfigurationSchema>;
