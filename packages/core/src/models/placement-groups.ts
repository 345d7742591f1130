import * as z from 'zod';
import { BackendTypeSchema } from './backend-type.js';

export const PLACEMENT_STRATEGIES = ['cluster'] as const;
export type PlacementStrategy = (typeof PLACEMENT_STRATEGIES)[number];

export const PlacementGroupConfigurationSchema = z.object({
  backend: BackendTypeSchema,
  region: z.string(),
  placement_strategy: z.enum(PLACEMENT_STRATEGIES),
});
export type PlacementGroupConfiguration = z.output<typeof PlacementGroupConfigurationSchema>;

export const PlacementGroupProvisioningDataSchema = z.object({
  /** May differ from the configuration's backend (a proxy backend provisions elsewhere). */
  backend: BackendTypeSchema,
  /** Backend-specific data, a JSON string. */
  backend_data: z.string().nullish(),
});
export type PlacementGroupProvisioningData = z.output<typeof PlacementGroupProvisioningDataSchema>;

export const PlacementGroupSchema = z.object({
  name: z.string(),
  project_name: z.string(),
  configuration: PlacementGroupConfigurationSchema,
  provisioning_data: PlacementGroupProvisioningDataSchema.nullish(),
});
export type PlacementGroup = z.output<typeof PlacementGroupSchema>;
