import { ACCELERATOR_VENDORS, CPU_ARCHITECTURES } from '@dstack/catalog';
import * as z from 'zod';
import { BackendTypeSchema } from './backend-type.js';

/** Vendor aliases dstack accepts on input (`tpu` → google, `tt` → tenstorrent). */
const VENDOR_ALIASES: Readonly<Record<string, string>> = { tpu: 'google', tt: 'tenstorrent' };

export const AcceleratorVendorSchema = z.preprocess(
  (value) =>
    typeof value === 'string' ? (VENDOR_ALIASES[value.toLowerCase()] ?? value.toLowerCase()) : value,
  z.enum(ACCELERATOR_VENDORS),
);

export const CpuArchitectureSchema = z.enum(CPU_ARCHITECTURES);

/**
 * One GPU (or TPU) of an instance. As in dstack, a `tpu-` name prefix means
 * vendor google (the prefix is dropped) and the default vendor is nvidia.
 */
export const GpuSchema = z.preprocess(
  (value) => {
    if (typeof value !== 'object' || value === null) return value;
    const gpu = { ...(value as Record<string, unknown>) };
    const isTpu = typeof gpu.name === 'string' && gpu.name.startsWith('tpu-');
    if (isTpu) gpu.name = (gpu.name as string).slice(4);
    if (gpu.vendor == null) gpu.vendor = isTpu ? 'google' : 'nvidia';
    return gpu;
  },
  z.object({
    name: z.string(),
    /** MiB of memory of this GPU; 0 when unknown (TPUs). */
    memory_mib: z.number().int().nonnegative(),
    vendor: AcceleratorVendorSchema,
  }),
);
export type Gpu = z.output<typeof GpuSchema>;

export const DiskSchema = z.object({
  /** MiB; 0 means unknown. */
  size_mib: z.number().int().nonnegative(),
});
export type Disk = z.output<typeof DiskSchema>;

/** dstack's default disk (100 GB) for offers that predate the disk field. */
export const DEFAULT_DISK_SIZE_MIB = 100 * 1024;

export const ResourcesSchema = z.object({
  cpus: z.number().int().nonnegative(),
  memory_mib: z.number().int().nonnegative(),
  gpus: z.array(GpuSchema),
  spot: z.boolean(),
  disk: DiskSchema.default({ size_mib: DEFAULT_DISK_SIZE_MIB }),
  cpu_arch: CpuArchitectureSchema.nullish(),
  /** Human-readable summary; optional, dstack fills it for display. */
  description: z.string().optional(),
});
export type Resources = z.output<typeof ResourcesSchema>;

export const InstanceTypeSchema = z.object({
  /** The provider's instance type name (or, for Vast.ai, the ask/bundle id). */
  name: z.string(),
  resources: ResourcesSchema,
});
export type InstanceType = z.output<typeof InstanceTypeSchema>;

export const InstanceOfferSchema = z.object({
  backend: BackendTypeSchema,
  instance: InstanceTypeSchema,
  region: z.string(),
  /** USD per hour. */
  price: z.number().nonnegative(),
  /** Backend-specific data carried from the catalog (e.g. the item's provider data). */
  backend_data: z.record(z.string(), z.unknown()).default({}),
});
export type InstanceOffer = z.output<typeof InstanceOfferSchema>;

export const INSTANCE_AVAILABILITIES = [
  'unknown',
  'available',
  'not_available',
  'no_quota',
  'no_balance',
  'idle',
  'busy',
] as const;
export type InstanceAvailability = (typeof INSTANCE_AVAILABILITIES)[number];
export const InstanceAvailabilitySchema = z.enum(INSTANCE_AVAILABILITIES);

/** True for unknown, available and idle: an offer the server may try to provision. */
export function isAvailable(availability: InstanceAvailability): boolean {
  return availability === 'unknown' || availability === 'available' || availability === 'idle';
}

/** What runs on the instance: the shim (VM backends) or directly the runner (container backends). */
export const INSTANCE_RUNTIMES = ['shim', 'runner'] as const;
export type InstanceRuntime = (typeof INSTANCE_RUNTIMES)[number];
export const InstanceRuntimeSchema = z.enum(INSTANCE_RUNTIMES);

export const InstanceOfferWithAvailabilitySchema = InstanceOfferSchema.extend({
  availability: InstanceAvailabilitySchema,
  /** Zones of `region` where the offer can be provisioned; null means any (or not applicable). */
  availability_zones: z.array(z.string()).nullish(),
  instance_runtime: InstanceRuntimeSchema.default('shim'),
  /** Blocks of the instance this offer takes (instances can be split into blocks). */
  blocks: z.number().int().positive().default(1),
  total_blocks: z.number().int().positive().default(1),
});
export type InstanceOfferWithAvailability = z.output<typeof InstanceOfferWithAvailabilitySchema>;

/** Adds availability to a catalog offer; `instance_runtime` defaults to shim, blocks to 1/1. */
export function withAvailability(
  offer: InstanceOffer,
  availability: InstanceAvailability,
  extra: {
    availability_zones?: string[] | null;
    instance_runtime?: InstanceRuntime;
    blocks?: number;
    total_blocks?: number;
  } = {},
): InstanceOfferWithAvailability {
  return {
    ...offer,
    availability,
    availability_zones: extra.availability_zones ?? null,
    instance_runtime: extra.instance_runtime ?? 'shim',
    blocks: extra.blocks ?? 1,
    total_blocks: extra.total_blocks ?? 1,
  };
}

/** An SSH jump host (`ssh_proxy`) or direct connection target. */
export const SSHConnectionParamsSchema = z.object({
  hostname: z.string(),
  username: z.string(),
  port: z.number().int().positive(),
});
export type SSHConnectionParams = z.output<typeof SSHConnectionParamsSchema>;
