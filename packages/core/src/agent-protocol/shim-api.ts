/**
 * The shim's HTTP API models (dstack's `runner/docs/shim.openapi.yaml`, task API v2): what the
 * shim accepts and answers, and what the server sends it.
 * Field names are dstack's (snake_case on the wire). Request objects are loose: a newer
 * server may send fields this shim does not know yet.
 */
import * as z from 'zod';

export const TaskStatusSchema = z.enum([
  'pending',
  'preparing',
  'pulling',
  'creating',
  'running',
  'terminated',
]);
export type TaskStatus = z.output<typeof TaskStatusSchema>;

/** A network volume the task attaches (dstack's `VolumeInfo`). */
export const TaskVolumeSchema = z.looseObject({
  backend: z.string(),
  name: z.string(),
  volume_id: z.string(),
  /** Format the volume when it has no file system (a volume dstack created; never a registered one). */
  init_fs: z.boolean().default(false),
  /**
   * Where the volume is on the host, as its attachment said (`VolumeAttachmentData.device_name`):
   * the device (`/dev/sdf`) for block volumes; for the local backend, the volume's directory.
   */
  device_name: z.string().nullish(),
});
export type TaskVolume = z.output<typeof TaskVolumeSchema>;

/** Where a network volume appears inside the container. */
export const TaskVolumeMountSchema = z.looseObject({ name: z.string(), path: z.string() });
export type TaskVolumeMount = z.output<typeof TaskVolumeMountSchema>;

/** A host directory bind-mounted into the container. */
export const TaskInstanceMountSchema = z.looseObject({
  instance_path: z.string(),
  path: z.string(),
  optional: z.boolean().default(false),
});
export type TaskInstanceMount = z.output<typeof TaskInstanceMountSchema>;

/** `POST /api/tasks`: what to run. */
export const TaskConfigSchema = z.looseObject({
  /** dstack sends the job submission's UUID; it names the task's directory, hence the character set. */
  id: z
    .string()
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9._-]*$/,
      'must start with a letter or digit and hold only letters, digits, ".", "_" and "-"',
    ),
  name: z.string(),
  image_name: z.string(),
  registry_username: z.string().default(''),
  registry_password: z.string().default(''),
  container_user: z.string().default(''),
  privileged: z.boolean().default(false),
  /** Number of GPUs; -1 means all of the host's GPUs, 0 none. */
  gpu: z.number().int().min(-1).default(0),
  /** CPUs (may be fractional); 0 means no limit. */
  cpu: z.number().nonnegative().default(0),
  /** Memory limit in bytes; 0 means no limit. */
  memory: z.number().int().nonnegative().default(0),
  /** Size of /dev/shm in bytes; 0 means the runtime's default. */
  shm_size: z.number().int().nonnegative().default(0),
  network_mode: z.enum(['host', 'bridge']).default('host'),
  volumes: z.array(TaskVolumeSchema).default([]),
  volume_mounts: z.array(TaskVolumeMountSchema).default([]),
  instance_mounts: z.array(TaskInstanceMountSchema).default([]),
  host_ssh_user: z.string().default(''),
  host_ssh_keys: z.array(z.string()).default([]),
  container_ssh_keys: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
});
/** A task as the shim holds it: defaults applied. */
export type TaskConfig = z.output<typeof TaskConfigSchema>;
/** A task as a client sends it: optional fields may be left out. */
export type TaskConfigInput = z.input<typeof TaskConfigSchema>;

/** A port published by the task: the runner's port in the container and where the host reaches it. */
export const TaskPortSchema = z.object({ container: z.number().int(), host: z.number().int() });
export type TaskPort = z.output<typeof TaskPortSchema>;

/** `GET /api/tasks/{id}`. */
export const TaskInfoSchema = z.object({
  id: z.string(),
  status: TaskStatusSchema,
  termination_reason: z.string().nullable(),
  termination_message: z.string().nullable(),
  ports: z.array(TaskPortSchema),
  container_name: z.string().nullable(),
  container_id: z.string().nullable(),
});
export type TaskInfo = z.output<typeof TaskInfoSchema>;

/** `GET /api/tasks`. */
export const TaskListSchema = z.object({
  tasks: z.array(z.object({ id: z.string(), status: TaskStatusSchema })),
});
export type TaskList = z.output<typeof TaskListSchema>;

/** `POST /api/tasks/{id}/terminate`. */
export const TaskTerminateRequestSchema = z.looseObject({
  termination_reason: z.string().nullish(),
  termination_message: z.string().nullish(),
  /** Grace period in seconds between SIGTERM and SIGKILL. */
  timeout: z.number().nonnegative().nullish(),
});
export type TaskTerminateRequest = z.input<typeof TaskTerminateRequestSchema>;

/** `POST /api/shutdown`. */
export const ShutdownRequestSchema = z.looseObject({ force: z.boolean().default(false) });

/** `GET /api/healthcheck`. */
export const ShimHealthcheckSchema = z.object({ service: z.literal('dstack-shim'), version: z.string() });
export type ShimHealthcheck = z.output<typeof ShimHealthcheckSchema>;

/** `GET /api/instance/info`: nulls on a host without GPUs. */
export const InstanceInfoSchema = z.object({
  gpu_vendor: z.string().nullable(),
  gpu_driver_version: z.string().nullable(),
});
export type InstanceInfo = z.output<typeof InstanceInfoSchema>;
