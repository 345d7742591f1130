import { z } from 'zod';
import { BackendTypeSchema } from './backend-type.js';
import { JobProvisioningDataSchema } from './runs.js';

export const COMPUTE_GROUP_STATUSES = ['running', 'terminated'] as const;
export type ComputeGroupStatus = (typeof COMPUTE_GROUP_STATUSES)[number];

/** Several instances the provider creates and deletes as one unit (group provisioning). */
export const ComputeGroupProvisioningDataSchema = z.object({
  compute_group_id: z.string(),
  compute_group_name: z.string(),
  backend: BackendTypeSchema,
  base_backend: BackendTypeSchema.nullish(),
  region: z.string(),
  /** One per job, in the order of the jobs given to `runJobs`. */
  job_provisioning_datas: z.array(JobProvisioningDataSchema),
  backend_data: z.string().nullish(),
});
export type ComputeGroupProvisioningData = z.output<typeof ComputeGroupProvisioningDataSchema>;

export const ComputeGroupSchema = z.object({
  id: z.string(),
  name: z.string(),
  project_name: z.string(),
  created_at: z.string(),
  status: z.enum(COMPUTE_GROUP_STATUSES),
  provisioning_data: ComputeGroupProvisioningDataSchema,
});
export type ComputeGroup = z.output<typeof ComputeGroupSchema>;
