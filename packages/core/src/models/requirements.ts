import * as z from 'zod';
import { AcceleratorVendorSchema, CpuArchitectureSchema } from './instances.js';

/**
 * The resources part of `Requirements`, in the parsed wire form of dstack's
 * `ResourcesSpec` (ranges as `{min, max}` objects, memory and disk in GB).
 * Defined structurally so that the configuration module's `ResourcesSpec`
 * (whose parser understands `"A100:80GB:2"`, `"2..8"`, …) satisfies it.
 */
export const RangeSchema = z.object({
  min: z.number().nonnegative().nullish(),
  max: z.number().nonnegative().nullish(),
});
export type Range = z.output<typeof RangeSchema>;

/** `"7.5"`, `7.5` or `[7, 5]` → `[7, 5]` (the wire form). */
export const ComputeCapabilitySchema = z.preprocess(
  (value) => {
    if (typeof value === 'number') value = Number.isInteger(value) ? `${value}.0` : String(value);
    if (typeof value === 'string') {
      const match = /^(\d+)\.(\d+)$/.exec(value.trim());
      return match ? [Number(match[1]), Number(match[2])] : value;
    }
    return value;
  },
  z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]),
);
export type ComputeCapabilityTuple = z.output<typeof ComputeCapabilitySchema>;

export const CpuRequirementsSchema = z.preprocess(
  // Before dstack 0.19 `cpu` was a bare count range; it still arrives from old clients.
  (value) =>
    typeof value === 'object' && value !== null && !('count' in value) && ('min' in value || 'max' in value)
      ? { count: value }
      : value,
  z.object({
    arch: CpuArchitectureSchema.nullish(),
    count: RangeSchema,
  }),
);

export const GpuRequirementsSchema = z.object({
  vendor: AcceleratorVendorSchema.nullish(),
  /** Accepted GPU names, any of them; case-insensitive. */
  name: z.array(z.string()).nullish(),
  count: RangeSchema,
  /** GB per GPU. */
  memory: RangeSchema.nullish(),
  /** GB over all GPUs. */
  total_memory: RangeSchema.nullish(),
  /** Minimum compute capability (NVIDIA). */
  compute_capability: ComputeCapabilitySchema.nullish(),
});

export const DiskRequirementsSchema = z.object({
  /** GB. */
  size: RangeSchema,
});

export const RequirementsResourcesSchema = z.object({
  cpu: CpuRequirementsSchema,
  /** GB. */
  memory: RangeSchema,
  /** GB. */
  shm_size: z.number().nonnegative().nullish(),
  gpu: GpuRequirementsSchema.nullish(),
  disk: DiskRequirementsSchema.nullish(),
});
export type RequirementsResources = z.output<typeof RequirementsResourcesSchema>;

/** What a job needs from an offer: `Requirements` in dstack's `runs.py`. */
export const RequirementsSchema = z.object({
  resources: RequirementsResourcesSchema,
  /** USD per hour. */
  max_price: z.number().positive().nullish(),
  /** true = spot only, false = on-demand only, null = either (`spot_policy: auto`). */
  spot: z.boolean().nullish(),
  /** A provider reservation (capacity reservation id, reservation name). */
  reservation: z.string().nullish(),
  /** The job is one of several nodes that must be interconnected. */
  multinode: z.boolean().nullish(),
  /** Backend-specific options from the profile, e.g. `{type: vastai, offer_order: price}`. */
  backend_options: z.array(z.looseObject({ type: z.string() })).nullish(),
});
export type Requirements = z.output<typeof RequirementsSchema>;
