import { ACCELERATOR_VENDORS, CPU_ARCHITECTURES } from '@dstack/catalog';
import * as z from 'zod';
import { BackendTypeSchema } from './backend-type.js';
import { VolumeSchema } from './volumes.js';

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

export const SSHKeySchema = z.object({
  public: z.string(),
  private: z.string().nullish(),
});
export type SSHKey = z.output<typeof SSHKeySchema>;

/** An SSH jump host (`ssh_proxy`) or direct connection target. */
export const SSHConnectionParamsSchema = z.object({
  hostname: z.string(),
  username: z.string(),
  port: z.number().int().positive(),
});
export type SSHConnectionParams = z.output<typeof SSHConnectionParamsSchema>;

/** What `createInstance` needs besides the offer (dstack's `InstanceConfiguration`). */
export const InstanceConfigurationSchema = z.object({
  project_name: z.string(),
  /** The dstack-side name (job name or `{fleet}-{n}`); make it unique with `generateUniqueBackendName`. */
  instance_name: z.string(),
  /** The dstack user who asked for the instance, for tags/labels. */
  user: z.string(),
  /**
   * Keys to authorize on the instance; the first is the project key, with its `private` half (as
   * dstack's), for backends that log in to finish the bootstrap (Lambda has no user data).
   */
  ssh_keys: z.array(SSHKeySchema),
  /**
   * dstack's id of the instance (the server's `instances` row): the idempotency key of the
   * launch. A second `createInstance` with the same `instance_id` must return the instance
   * the first call launched (or fail), never launch another, so a server that died mid-call
   * and retries leaves no orphaned machine. Use it as EC2 `ClientToken`, in the GCP instance
   * name, as a Vast.ai label.
   */
  instance_id: z.string().min(1),
  /**
   * The instance's agent token, chosen by the server per instance: give it to the shim the
   * instance starts, never on its command line (`ps` shows that to every user) — in
   * `DSTACK_SHIM_TOKEN`, or in a file only the shim's user may read, passed as `--token-file`
   * (cloud-init: a `write_files` entry with `permissions: '0600'`). The shim then answers only
   * requests that carry it. Keep it out of logs, tags and labels: whoever holds it can run
   * commands on the instance through the shim.
   */
  agent_token: z.string().min(1),
  /**
   * Where a VM's bootstrap downloads the agent runtime from: a tarball of
   * `@dstack/runner-runtime-linux-x64` (`package/dist/dstack-runtime/shim.mjs`, …) or an archive of
   * that directory as `dstack-runtime/`. The server fills it from its setting
   * (`DSTACK_SHIM_DOWNLOAD_URL`); absent or null: that package's npm tarball at @dstack/core's version.
   */
  agent_download_url: z.string().url().nullish(),
  /** The download's sha256 (hex), which the host checks before unpacking; null: not checked. */
  agent_download_sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'expected 64 lowercase hex digits')
    .nullish(),
  /** The download's size in bytes, checked too, and what lets a partial download resume. */
  agent_download_size: z.number().int().positive().nullish(),
  reservation: z.string().nullish(),
  volumes: z.array(VolumeSchema).nullish(),
  /** User tags; backend tags win on conflict (see `mergeTags`). */
  tags: z.record(z.string(), z.string()).nullish(),
});
export type InstanceConfiguration = z.output<typeof InstanceConfigurationSchema>;
