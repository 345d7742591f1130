import { DSTACK_RUNNER_HTTP_PORT, type TaskConfig } from '@dstack/core/agent-protocol';

/** The label every task container carries; its value is the task id. */
export const TASK_ID_LABEL = 'ai.dstack.task-id';
/** Where the runner's portable runtime (node, its loader and libraries, the runner bundle) appears in the container. */
export const CONTAINER_RUNTIME_PATH = '/dstack/runtime';
/** Where the task's home directory on the host appears in the container. */
export const CONTAINER_RUNNER_HOME = '/dstack/home';
/**
 * The container's user: always root, as dstack's shim does, so that the runner can manage its
 * home, logs and the job's process group. Numeric, so that images without a passwd entry work.
 */
export const CONTAINER_ROOT_USER = '0:0';

export interface ContainerSpecInput {
  task: TaskConfig;
  /** The task's home directory on the host. */
  taskHomeDir: string;
  /** The runner's portable runtime on the host, mounted read-only at {@link CONTAINER_RUNTIME_PATH}. */
  runtimeDirectory: string;
  /** The command line that starts the runner from the mounted runtime (`runtimeRunnerCommand`). */
  runnerCommand: readonly string[];
  /** Host networking: the free host port the runner listens on. Unused in bridge mode. */
  runnerPort: number;
  /**
   * The host GPUs (NVIDIA indices) the task holds: the container gets exactly these. Default
   * null: the host's GPUs are unknown, and the task's `gpu` count goes to Docker as is.
   */
  gpuIds?: readonly string[] | null;
  /** The task's network volumes, as host directories to bind at their paths (`volumeBinds`). Default none. */
  volumeBinds?: ReadonlyArray<{ source: string; target: string }>;
  /** Variables the shim sets for the runner; they win over the task's `env`. */
  shimEnvironment?: Record<string, string>;
  /**
   * The image's own user (its `USER`, Docker's `Config.User`): jobs run as it when the task's
   * `container_user` is empty. Default: none, so such jobs run as root.
   */
  imageUser?: string;
}

export interface ContainerMount {
  Type: 'bind';
  Source: string;
  Target: string;
  ReadOnly: boolean;
}

/** Docker's device request: `Count` devices of the driver, or exactly `DeviceIDs`. */
export interface DeviceRequest {
  Driver: string;
  Count?: number;
  DeviceIDs?: string[];
  Capabilities: string[][];
}

export interface PortBinding {
  HostIp: string;
  HostPort: string;
}

/** The body of `POST /containers/create` (the fields this runtime sets). */
export interface ContainerCreateBody {
  Image: string;
  User: string;
  Env: string[];
  Cmd: string[];
  Labels: Record<string, string>;
  ExposedPorts?: Record<string, Record<string, never>>;
  HostConfig: {
    NetworkMode: 'host' | 'bridge';
    Init: boolean;
    Privileged: boolean;
    Mounts: ContainerMount[];
    PortBindings?: Record<string, PortBinding[]>;
    Memory?: number;
    NanoCpus?: number;
    ShmSize?: number;
    DeviceRequests?: DeviceRequest[];
  };
}

export interface ContainerSpec {
  name: string;
  body: ContainerCreateBody;
}

/** The port key Docker uses for the runner in bridge mode, where it listens on dstack's port. */
export const BRIDGE_RUNNER_PORT_KEY = `${DSTACK_RUNNER_HTTP_PORT}/tcp`;

/** Builds the container name and the create request for a task. Pure: no I/O. */
export function buildContainerSpec(input: ContainerSpecInput): ContainerSpec {
  const { task } = input;
  const bridge = task.network_mode === 'bridge';
  const runnerPort = bridge ? DSTACK_RUNNER_HTTP_PORT : input.runnerPort;
  const environment = { ...task.env, ...input.shimEnvironment };
  // The runner, not Docker, switches to the job's user: it resolves it in the container's
  // /etc/passwd and /etc/group and runs the job's shell as it (dstack's runner does the same).
  const jobUser = task.container_user !== '' ? task.container_user : (input.imageUser ?? '');

  const body: ContainerCreateBody = {
    Image: task.image_name,
    User: CONTAINER_ROOT_USER,
    Env: Object.entries(environment).map(([key, value]) => `${key}=${value}`),
    Cmd: [
      ...input.runnerCommand,
      'start',
      '--http-port',
      String(runnerPort),
      '--home',
      CONTAINER_RUNNER_HOME,
      '--host',
      // With host networking loopback is the host's; in bridge mode Docker forwards from outside.
      bridge ? '0.0.0.0' : '127.0.0.1',
      ...(jobUser === '' ? [] : ['--job-user', jobUser]),
    ],
    Labels: { [TASK_ID_LABEL]: task.id },
    HostConfig: {
      NetworkMode: bridge ? 'bridge' : 'host',
      // An init process as PID 1 forwards `docker stop`'s SIGTERM and reaps the job's orphans.
      Init: true,
      Privileged: task.privileged,
      Mounts: [
        bindMount(input.runtimeDirectory, CONTAINER_RUNTIME_PATH, true),
        bindMount(input.taskHomeDir, CONTAINER_RUNNER_HOME, false),
        ...task.instance_mounts.map((mount) => bindMount(mount.instance_path, mount.path, false)),
        ...(input.volumeBinds ?? []).map((bind) => bindMount(bind.source, bind.target, false)),
      ],
    },
  };
  if (bridge) {
    body.ExposedPorts = { [BRIDGE_RUNNER_PORT_KEY]: {} };
    // An empty HostPort lets Docker choose; the runtime reads it back from inspect.
    body.HostConfig.PortBindings = { [BRIDGE_RUNNER_PORT_KEY]: [{ HostIp: '127.0.0.1', HostPort: '' }] };
  }
  if (task.memory > 0) body.HostConfig.Memory = task.memory;
  if (task.cpu > 0) body.HostConfig.NanoCpus = Math.round(task.cpu * 1e9);
  if (task.shm_size > 0) body.HostConfig.ShmSize = task.shm_size;
  const deviceRequest = gpuDeviceRequest(task, input.gpuIds ?? null);
  if (deviceRequest) body.HostConfig.DeviceRequests = [deviceRequest];
  return { name: containerNameFor(task), body };
}

/** The task's GPUs: the ones it holds by id, or by count when the host's GPUs are unknown. */
function gpuDeviceRequest(task: TaskConfig, gpuIds: readonly string[] | null): DeviceRequest | null {
  if (gpuIds !== null) {
    return gpuIds.length > 0 ? { Driver: 'nvidia', DeviceIDs: [...gpuIds], Capabilities: [['gpu']] } : null;
  }
  return task.gpu !== 0 ? { Driver: 'nvidia', Count: task.gpu, Capabilities: [['gpu']] } : null;
}

function bindMount(source: string, target: string, readOnly: boolean): ContainerMount {
  return { Type: 'bind', Source: source, Target: target, ReadOnly: readOnly };
}

/**
 * `dstack-<task name>-<first 8 characters of the id>`, reduced to what Docker accepts in a
 * name (`[a-zA-Z0-9][a-zA-Z0-9_.-]*`); the id part keeps two tasks of one name apart.
 */
export function containerNameFor(task: Pick<TaskConfig, 'id' | 'name'>): string {
  const name = sanitizeNamePart(task.name);
  const shortId = sanitizeNamePart(task.id).slice(0, 8);
  return ['dstack', name, shortId].filter((part) => part !== '').join('-');
}

function sanitizeNamePart(text: string): string {
  return text
    .replace(/[^a-zA-Z0-9_.-]+/g, '-')
    .replace(/^[-_.]+|[-_.]+$/g, '')
    .slice(0, 63);
}
