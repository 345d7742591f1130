import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { RUNNER_TOKEN_ENV, type TaskConfig } from '@dstack/core/agent-protocol';
import { type PortableRuntime, runtimeRunnerCommand } from '@dstack/runner';
import { findFreePort } from '../../net/free-port.js';
import {
  type StartedTask,
  type TaskAccess,
  type TaskDevices,
  type TaskEvents,
  type TaskRuntime,
  TaskStartError,
} from '../task-runtime.js';
import { type PreparedVolumes, prepareVolumes } from '../task-volumes.js';
import {
  BRIDGE_RUNNER_PORT_KEY,
  buildContainerSpec,
  CONTAINER_RUNNER_HOME,
  CONTAINER_RUNTIME_PATH,
  type ContainerSpec,
} from './container-spec.js';
import { DockerContainers } from './docker-containers.js';
import { DockerEngineClient, DockerEngineError } from './docker-engine-client.js';
import { ensureImage, imageUser } from './docker-images.js';
import { defaultRuntimeCacheDirectory, onePortableRuntime } from './runner-runtime.js';
import { waitForRunner } from './wait-for-runner.js';

/** Why a task failed to start, in dstack's termination reasons. */
const CREATING_CONTAINER_ERROR = 'creating_container_error';
const PORTS_BINDING_FAILED = 'ports_binding_failed';

/** Host networking: how many free ports to try when another process takes the chosen one first. */
const HOST_PORT_ATTEMPTS = 3;

/** The runner could not bind its host port: another process took it after it was chosen. */
class RunnerPortTakenError extends Error {
  constructor(readonly startError: TaskStartError) {
    super(startError.message);
  }
}

/** How many of the container's last log lines a start error quotes. */
const LOG_LINES_IN_ERRORS = 50;

export interface DockerRuntimeOptions {
  /**
   * The Docker daemon's unix socket.
   * Default: the path in `DOCKER_HOST` when it is `unix://…`, else `/var/run/docker.sock`.
   */
  socketPath?: string;
  /** The runner bundle in the portable runtime mounted into containers. Default: `@dstack/runner`'s `RUNNER_BUNDLE_PATH`. */
  runnerBundlePath?: string;
  /** The node binary in that runtime (with its loader and libraries). Default: `process.execPath`. */
  nodeBinaryPath?: string;
  /**
   * A complete portable runtime to mount as it is instead of building one (the shim's
   * `--runner-runtime`: the agent runtime the shim itself runs from). Overrides the two above.
   */
  portableRuntimeDirectory?: string;
  /**
   * Where the portable runtime is built, once per node binary and runner bundle.
   * Default: `$XDG_CACHE_HOME/dstack/runner-runtime` (`~/.cache/dstack/runner-runtime`), shared
   * by the shims of one user; the shim command's `--runtime-cache`.
   */
  runtimeCacheDirectory?: string;
  /** How long the runner has to answer its healthcheck after the container starts. Default 60 000 ms. */
  runnerStartTimeoutMs?: number;
  /**
   * Where cloud volumes (block devices) are mounted, one directory per volume name.
   * Default: `volumes` in the shim's home (the parent of its `tasks` directory).
   */
  volumesDirectory?: string;
}

/** The Docker runtime, with what tests and the shim need beyond {@link TaskRuntime}. */
export interface DockerTaskRuntime extends TaskRuntime {
  readonly name: 'docker';
  readonly containers: DockerContainers;
  /** Closes the connections to the daemon. Containers keep running. */
  close(): Promise<void>;
}

/**
 * Runs each task's runner in a Docker container of the task's image, from the portable runtime
 * (the host's node with its own loader and libraries, and the runner bundle) mounted read-only:
 * it starts whatever libc the image has, or none.
 */
export function createDockerRuntime(options: DockerRuntimeOptions = {}): DockerTaskRuntime {
  const client = new DockerEngineClient({ socketPath: options.socketPath });
  const containers = new DockerContainers(client);
  const runnerStartTimeoutMs = options.runnerStartTimeoutMs ?? 60_000;
  const portableRuntime = onePortableRuntime({
    cacheDirectory: options.runtimeCacheDirectory ?? defaultRuntimeCacheDirectory(),
    nodeBinaryPath: options.nodeBinaryPath,
    runnerBundlePath: options.runnerBundlePath,
    existingDirectory: options.portableRuntimeDirectory,
  });

  async function start(
    task: TaskConfig,
    taskHomeDir: string,
    events: TaskEvents,
    devices: TaskDevices = { gpuIds: null },
    access: TaskAccess = { runnerToken: null },
  ): Promise<StartedTask> {
    events.onStatus('preparing');
    // First: a volume the task cannot have fails it before anything is pulled.
    const volumes = await prepareVolumes(task, {
      // A task's home is <shim home>/tasks/<id>.
      volumesDirectory: options.volumesDirectory ?? join(taskHomeDir, '..', '..', 'volumes'),
    });
    try {
      return await startWithVolumes(task, taskHomeDir, events, devices, access, volumes);
    } catch (error) {
      await volumes.release().catch(() => undefined);
      throw error;
    }
  }

  async function startWithVolumes(
    task: TaskConfig,
    taskHomeDir: string,
    events: TaskEvents,
    devices: TaskDevices,
    access: TaskAccess,
    volumes: PreparedVolumes,
  ): Promise<StartedTask> {
    const runtime = await prepareHost(taskHomeDir, portableRuntime);

    events.onStatus('pulling');
    let userOfImage: string;
    try {
      await ensureImage(client, {
        imageName: task.image_name,
        registryUsername: task.registry_username,
        registryPassword: task.registry_password,
      });
      userOfImage = task.container_user === '' ? await imageUser(client, task.image_name) : '';
    } catch (error) {
      throw new TaskStartError(CREATING_CONTAINER_ERROR, messageOf(error));
    }

    events.onStatus('creating');
    const mountedTask = withExistingInstanceMounts(task);
    for (let attempt = 1; ; attempt++) {
      const hostNetworkPort = task.network_mode === 'host' ? await findFreePort('127.0.0.1') : 0;
      const spec = buildContainerSpec({
        task: mountedTask,
        taskHomeDir,
        runtimeDirectory: runtime.directory,
        runnerCommand: runtimeRunnerCommand(runtime.manifest, CONTAINER_RUNTIME_PATH),
        runnerPort: hostNetworkPort,
        imageUser: userOfImage,
        gpuIds: devices.gpuIds,
        volumeBinds: volumes.binds,
        shimEnvironment: {
          DSTACK_TASK_ID: task.id,
          DSTACK_RUNNER_HOME: CONTAINER_RUNNER_HOME,
          // In the environment, not the command line: only who may inspect the container sees it,
          // and the runner removes it from the environment its job inherits.
          ...(access.runnerToken === null ? {} : { [RUNNER_TOKEN_ENV]: access.runnerToken }),
        },
      });
      const containerId = await createContainer(containers, spec);
      try {
        return await startAndAwaitRunner(containerId, spec, hostNetworkPort, volumes);
      } catch (error) {
        await containers.remove(containerId).catch(() => undefined);
        if (error instanceof RunnerPortTakenError) {
          if (attempt < HOST_PORT_ATTEMPTS) continue;
          throw error.startError;
        }
        throw error;
      }
    }
  }

  async function startAndAwaitRunner(
    containerId: string,
    spec: ContainerSpec,
    hostNetworkPort: number,
    volumes: PreparedVolumes,
  ): Promise<StartedTask> {
    try {
      await containers.start(containerId);
    } catch (error) {
      const reason =
        spec.body.HostConfig.NetworkMode === 'bridge' ? PORTS_BINDING_FAILED : CREATING_CONTAINER_ERROR;
      throw new TaskStartError(reason, `cannot start container ${spec.name}: ${messageOf(error)}`);
    }
    const runnerPort =
      spec.body.HostConfig.NetworkMode === 'host'
        ? hostNetworkPort
        : await readPublishedRunnerPort(containers, containerId, spec.name);
    const exited = containers.wait(containerId).then(
      (exitCode) => ({ exitCode }),
      // The container was removed, or the daemon went away: its exit code is unknown.
      () => ({ exitCode: null }),
    );
    // The volumes are unmounted once the container is gone, before the server detaches them.
    const released = exited.then(() => volumes.release()).catch(() => undefined);
    const outcome = await waitForRunner({
      url: `http://127.0.0.1:${runnerPort}`,
      exited,
      timeoutMs: runnerStartTimeoutMs,
    });
    if (outcome.kind !== 'healthy') {
      const why =
        outcome.kind === 'exited'
          ? `exited with code ${outcome.exitCode ?? 'unknown'} before its runner answered`
          : `did not answer the runner healthcheck within ${runnerStartTimeoutMs} ms`;
      const logs = await containers.logs(containerId, LOG_LINES_IN_ERRORS).catch(() => '');
      const startError = new TaskStartError(
        CREATING_CONTAINER_ERROR,
        `container ${spec.name} ${why}${logs.trim() === '' ? '' : `; its last output:\n${logs.trimEnd()}`}`,
      );
      if (spec.body.HostConfig.NetworkMode === 'host' && logs.includes('EADDRINUSE')) {
        throw new RunnerPortTakenError(startError);
      }
      throw startError;
    }
    return {
      runnerPort,
      containerName: spec.name,
      containerId,
      exited,
      stop: async (timeoutSeconds) => {
        await containers.stop(containerId, timeoutSeconds);
        await volumes.release();
      },
      remove: async () => {
        await containers.remove(containerId);
        await released;
      },
    };
  }

  return {
    name: 'docker',
    containers,
    start,
    close: () => client.close(),
  };
}

async function prepareHost(
  taskHomeDir: string,
  portableRuntime: () => Promise<PortableRuntime>,
): Promise<PortableRuntime> {
  let runtime: PortableRuntime;
  try {
    runtime = await portableRuntime();
  } catch (error) {
    throw new TaskStartError(
      CREATING_CONTAINER_ERROR,
      `cannot prepare the runner's portable runtime: ${messageOf(error)}`,
    );
  }
  await mkdir(taskHomeDir, { recursive: true });
  return runtime;
}

/** Optional instance mounts whose host path is missing are left out; required ones fail in Docker. */
function withExistingInstanceMounts(task: TaskConfig): TaskConfig {
  const mounts = task.instance_mounts.filter((mount) => !mount.optional || existsSync(mount.instance_path));
  return { ...task, instance_mounts: mounts };
}

async function createContainer(containers: DockerContainers, spec: ContainerSpec): Promise<string> {
  let failure: unknown;
  try {
    return await containers.create(spec.name, spec.body);
  } catch (error) {
    failure = error;
  }
  if (failure instanceof DockerEngineError && failure.statusCode === 409) {
    // A container of this name is left from an earlier attempt at the same task: replace it.
    try {
      await containers.remove(spec.name);
      return await containers.create(spec.name, spec.body);
    } catch (error) {
      failure = error;
    }
  }
  throw new TaskStartError(
    CREATING_CONTAINER_ERROR,
    `cannot create container ${spec.name} from ${spec.body.Image}: ${messageOf(failure)}`,
  );
}

/** Bridge networking: the host port Docker chose for the runner's port. */
async function readPublishedRunnerPort(
  containers: DockerContainers,
  containerId: string,
  containerName: string,
): Promise<number> {
  const inspection = await containers.inspect(containerId);
  const hostPort = inspection.NetworkSettings.Ports?.[BRIDGE_RUNNER_PORT_KEY]?.[0]?.HostPort;
  const port = Number(hostPort);
  if (hostPort === undefined || !Number.isInteger(port) || port <= 0) {
    throw new TaskStartError(PORTS_BINDING_FAILED, `Docker published no host port for ${containerName}`);
  }
  return port;
}

function messageOf(error: unknown): string {
  if (error instanceof DockerEngineError) return error.dockerMessage;
  return error instanceof Error ? error.message : String(error);
}
