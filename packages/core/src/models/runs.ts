import * as z from 'zod';
import { BackendTypeSchema } from './backend-type.js';
import {
  InstanceOfferWithAvailabilitySchema,
  InstanceTypeSchema,
  SSHConnectionParamsSchema,
} from './instances.js';

/**
 * Where a job (or a fleet instance) landed, as a backend reports it from
 * `runJob`/`createInstance` and completes it in `updateProvisioningData`.
 */
export const JobProvisioningDataSchema = z.object({
  backend: BackendTypeSchema,
  /** Set by a backend that provisions in another backend, to that backend. */
  base_backend: BackendTypeSchema.nullish(),
  instance_type: InstanceTypeSchema,
  /** The provider's instance (or container/contract) id; what `terminateInstance` receives. */
  instance_id: z.string(),
  /** Public IP, or private IP when public IPs are off. Null until known (see `updateProvisioningData`). */
  hostname: z.string().nullish(),
  internal_ip: z.string().nullish(),
  /** Whether the instance has a public IP; `hostname` being null does not tell, it may come later. */
  public_ip_enabled: z.boolean().default(true),
  /** Multinode network `<ip>/<mask>` from which `internal_ip` is chosen. */
  instance_network: z.string().nullish(),
  region: z.string(),
  availability_zone: z.string().nullish(),
  reservation: z.string().nullish(),
  /** USD per hour. */
  price: z.number().nonnegative(),
  /** The SSH user on the host (VM backends) or in the container (container backends). */
  username: z.string(),
  /** Null until known; 22 on VMs, the mapped runner sshd port on container backends. */
  ssh_port: z.number().int().positive().nullish(),
  /** True when a shim runs on the host and starts job containers (VM backends). */
  dockerized: z.boolean(),
  /** A jump host the server must go through to reach `hostname`. */
  ssh_proxy: SSHConnectionParamsSchema.nullish(),
  /** Backend-specific data, a JSON string (e.g. `{"zone": "us-central1-a"}`). */
  backend_data: z.string().nullish(),
  /** GPU driver info reported by the backend, passed through. */
  gpu_driver: z.record(z.string(), z.unknown()).nullish(),
});
export type JobProvisioningData = z.output<typeof JobProvisioningDataSchema>;

/** The backend that actually holds the instance: `base_backend` when set, else `backend`. */
export function getBaseBackend(provisioningData: JobProvisioningData): string {
  return provisioningData.base_backend ?? provisioningData.backend;
}

export const NETWORK_MODES = ['host', 'bridge'] as const;
export type NetworkMode = (typeof NETWORK_MODES)[number];

/** What is only known once the job is submitted to an instance. */
export const JobRuntimeDataSchema = z.object({
  network_mode: z.enum(NETWORK_MODES),
  /** GPUs given to the job; null means all, without limit. */
  gpu: z.number().int().nonnegative().nullish(),
  /** CPUs given to the job; null means all. */
  cpu: z.number().nonnegative().nullish(),
  /** GB of memory given to the job; null means all. */
  memory: z.number().nonnegative().nullish(),
  /**
   * Container → host port mapping reported by the shim. `{}` in host network
   * mode; null when not yet known or not applicable (container backends).
   * JSON object keys are strings, as on the wire.
   */
  ports: z.record(z.string(), z.number().int()).nullish(),
  volume_names: z.array(z.string()).nullish(),
  /** The (possibly shared, block-sized) offer the job runs on. */
  offer: InstanceOfferWithAvailabilitySchema.nullish(),
  working_dir: z.string().nullish(),
  username: z.string().nullish(),
});
export type JobRuntimeData = z.output<typeof JobRuntimeDataSchema>;
