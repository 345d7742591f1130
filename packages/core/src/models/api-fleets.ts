/**
 * Fleets and their instances as the server's HTTP API answers them (`fleets/*`).
 */
import * as z from 'zod';
import { ConfigurationObjectSchema, DateTimeSchema } from './api-wire.js';
import { BackendTypeSchema } from './backend-type.js';
import { FleetStatusSchema, InstanceStatusSchema, InstanceTerminationReasonSchema } from './statuses.js';

export const InstanceSchema = z.object({
  id: z.string(),
  project_name: z.string(),
  name: z.string(),
  fleet_id: z.string().nullish(),
  fleet_name: z.string().nullish(),
  instance_num: z.number().int().nonnegative(),
  status: InstanceStatusSchema,
  unreachable: z.boolean().default(false),
  termination_reason: InstanceTerminationReasonSchema.nullish(),
  created: DateTimeSchema,
  backend: BackendTypeSchema.nullish(),
  region: z.string().nullish(),
  instance_type: z.looseObject({ name: z.string() }).nullish(),
  hostname: z.string().nullish(),
  price: z.number().nullish(),
  total_blocks: z.number().int().nullish(),
  busy_blocks: z.number().int().default(0),
});
export type Instance = z.output<typeof InstanceSchema>;

export const FleetSchema = z.object({
  id: z.string(),
  name: z.string(),
  project_name: z.string(),
  /** `{configuration, profile}` as applied. */
  spec: z.looseObject({ configuration: ConfigurationObjectSchema }),
  created_at: DateTimeSchema,
  status: FleetStatusSchema,
  status_message: z.string().nullish(),
  instances: z.array(InstanceSchema),
});
export type Fleet = z.output<typeof FleetSchema>;
