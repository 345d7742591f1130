import { writeFileSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { basename, join, resolve } from 'node:path';
import {
  type Capability,
  type ComputeWithCreateInstance,
  type ComputeWithVolumes,
  type InstanceConfiguration,
  type InstanceOfferWithAvailability,
  type JobProvisioningData,
  ProvisioningError,
  type Requirements,
  type RunJobParams,
  runJobWithCreateInstance,
  type Volume,
  type VolumeAttachmentData,
  type VolumeProvisioningData,
} from '@dstack/core';
import { SHIM_BIN_PATH } from '@dstack/shim';
import { detectHostResources, type HostResources } from './host-resources.js';
import { LAUNCH_RECORD_FILE, type LaunchRecord, readLaunchRecord } from './launch-record.js';
import { liveLocalInstances, placeOnHost, withCapacityLock } from './local-capacity.js';
import {
  DEFAULT_LOCAL_RUNTIME,
  type LocalRuntime,
  resolveInstancesDir,
  resolveVolumesDir,
} from './local-config.js';
import { getLocalOffers, LOCAL_BACKEND_TYPE, LOCAL_REGION } from './local-offers.js';
import { LocalVolumes } from './local-volumes.js';
import { isShimProcess, readShimState, shimLogTail, spawnDetachedShim, stopShim } from './shim-process.js';

/**
 * Every local instance is on this host: their jobs reach each other on loopback (multi-node tasks).
 * No `instance-volumes`: a host path mounted into a job's container (where jobs run as root) would
 * give every job the server host's files; volumes (directories of `volumes_dir`) are mounted instead.
 */
export const LOCAL_CAPABILITIES: readonly Capability[] = ['create-instance', 'multinode', 'volumes'];

/** Settings of `createLocalBackend`. */
export interface LocalBackendSettings {
  /** How the shim runs jobs. Default `process`. */
  runtime?: LocalRuntime;
  /**
   * Where instance homes are created, one directory per instance.
   * Default `$DSTACK_SERVER_DIR/local-instances`, else `~/.dstack/server/local-instances`.
   */
  instancesDir?: string;
  /**
   * Where volumes are kept, one directory per volume.
   * Default `$DSTACK_SERVER_DIR/data/volumes`, else `~/.dstack/server/data/volumes`.
   */
  volumesDir?: string;
  /** The host's resources; default detected once, on the first `getOffers`. For tests. */
  hostResources?: HostResources;
  /** The shim entry point; default `SHIM_BIN_PATH` of @dstack/shim. */
  shimBinPath?: string;
  /** How long a terminating shim gets to stop its tasks before it is killed; default 10000 ms. */
  terminationGraceMs?: number;
}

/** What `backend_data` holds for a local instance (JSON). */
export interface LocalBackendData {
  /** The instance home, `<instances_dir>/<instance id>`. */
  home: string;
  /** The shim's pid. */
  pid: number;
  /** Set once the shim listens; the server's agent connector reads it. */
  agent_ports?: { shim: number };
}

/** The hostname of every local instance: agents listen on loopback. */
export const LOCAL_HOSTNAME = '127.0.0.1';

/**
 * Runs jobs on the server's own host: each instance is a shim process with its
 * own home directory under `instancesDir`, started detached so that its jobs
 * survive a server restart. There is no SSH: the server talks to the shim on
 * loopback at the port the shim announces in `<home>/shim.json`.
 *
 * Launches are keyed by dstack's instance id: the home is
 * `<instance name>-<dstack instance id>` and records the launch, so a second
 * launch with the same id returns the running shim's data instead of starting another.
 *
 * An instance takes the share of the host its offer describes (see `getLocalOffers`); a launch
 * that does not fit beside the live instances of `instancesDir` fails with `NoCapacityError`.
 */
export class LocalCompute implements ComputeWithCreateInstance, ComputeWithVolumes {
  readonly type = LOCAL_BACKEND_TYPE;
  readonly capabilities = LOCAL_CAPABILITIES;
  readonly runtime: LocalRuntime;
  readonly instancesDir: string;
  readonly volumes: LocalVolumes;
  readonly #shimBinPath: string;
  readonly #terminationGraceMs: number;
  /** Launches in progress in this process, by dstack instance id: concurrent repeats share one. */
  readonly #launching = new Map<string, Promise<JobProvisioningData>>();
  #hostResources: Promise<HostResources> | undefined;

  constructor(settings: LocalBackendSettings = {}) {
    this.runtime = settings.runtime ?? DEFAULT_LOCAL_RUNTIME;
    this.instancesDir = resolveInstancesDir(settings.instancesDir);
    this.volumes = new LocalVolumes(resolveVolumesDir(settings.volumesDir));
    this.#shimBinPath = settings.shimBinPath ?? SHIM_BIN_PATH;
    this.#terminationGraceMs = settings.terminationGraceMs ?? 10_000;
    if (settings.hostResources) this.#hostResources = Promise.resolve(settings.hostResources);
  }

  /** The host's resources, detected once. */
  hostResources(): Promise<HostResources> {
    this.#hostResources ??= detectHostResources({ instancesDir: this.instancesDir });
    return this.#hostResources;
  }

  imageRefusal(): string | null {
    return this.runtime === 'process'
      ? "the local backend runs jobs as processes on the server's host (runtime: process), not in images; set `runtime: docker` on the local backend in the server's config.yml"
      : null;
  }

  volumeMountRefusal(): string | null {
    return this.runtime === 'process'
      ? "the local backend runs jobs as processes on the server's host (runtime: process), with no container to mount volumes in; set `runtime: docker` on the local backend in the server's config.yml"
      : null;
  }

  createVolume(volume: Volume): Promise<VolumeProvisioningData> {
    return this.volumes.create(volume);
  }

  registerVolume(volume: Volume): Promise<VolumeProvisioningData> {
    return this.volumes.register(volume);
  }

  deleteVolume(volume: Volume): Promise<void> {
    return this.volumes.delete(volume);
  }

  /** The volume's directory: `volumes_dir` is the host's, shared by every project with a local backend. */
  volumeLocation(volumeId: string): string {
    return this.volumes.directoryOf(volumeId);
  }

  attachVolume(volume: Volume): Promise<VolumeAttachmentData> {
    return this.volumes.attach(volume);
  }

  /** Nothing to undo: the container that bind-mounted the directory is gone with the job. */
  async detachVolume(): Promise<void> {}

  /** A directory on one host: several jobs may mount it at once. */
  allowsMultiAttach(): boolean {
    return true;
  }

  async getOffers(requirements: Requirements): Promise<InstanceOfferWithAvailability[]> {
    const host = await this.hostResources();
    return getLocalOffers(requirements, host, await liveLocalInstances(this.instancesDir));
  }

  runJob(params: RunJobParams): Promise<JobProvisioningData> {
    return runJobWithCreateInstance(this, params);
  }

  async createInstance(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
  ): Promise<JobProvisioningData> {
    const key = config.instance_id;
    const inProgress = this.#launching.get(key);
    if (inProgress) return inProgress;
    const launch = this.#launchOnce(offer, config).finally(() => this.#launching.delete(key));
    this.#launching.set(key, launch);
    return launch;
  }

  /**
   * The instance launched with dstack instance id `config.instance_id`, started now unless it
   * already was; refused with `NoCapacityError` when its share of the host is taken.
   */
  async #launchOnce(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
  ): Promise<JobProvisioningData> {
    const host = await this.hostResources();
    await mkdir(this.instancesDir, { recursive: true, mode: 0o700 });
    // Checking what is free and recording the new instance are one step for every process on the host.
    return withCapacityLock(this.instancesDir, async () => {
      const launched = await this.#launchRecordOf(config.instance_id);
      if (launched) return launched.provisioning_data;
      const gpuIds = placeOnHost(host, await liveLocalInstances(this.instancesDir), offer.instance.resources);
      return this.#spawnInstance(offer, config, gpuIds);
    });
  }

  /** Starts the shim of a new instance holding `gpuIds`, and records the launch in its home. */
  async #spawnInstance(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
    gpuIds: string[],
  ): Promise<JobProvisioningData> {
    const instanceId = `${safeDirectoryName(config.instance_name)}-${safeDirectoryName(config.instance_id)}`;
    const home = join(this.instancesDir, instanceId);
    // The instance's shim keeps job specs there (env, secrets, code): the server's user only.
    await mkdir(home, { recursive: true, mode: 0o700 });
    let pid: number;
    try {
      pid = spawnDetachedShim({
        shimBinPath: this.#shimBinPath,
        home,
        runtime: this.runtime,
        gpuIds,
        token: config.agent_token,
      });
    } catch (error) {
      await rm(home, { recursive: true, force: true });
      throw error;
    }
    const backendData: LocalBackendData = { home, pid };
    const provisioningData: JobProvisioningData = {
      backend: LOCAL_BACKEND_TYPE,
      instance_type: offer.instance,
      instance_id: instanceId,
      hostname: null,
      internal_ip: null,
      // Nothing is exposed beyond loopback.
      public_ip_enabled: false,
      region: LOCAL_REGION,
      price: 0,
      username: userInfo().username,
      ssh_port: null,
      dockerized: true,
      backend_data: JSON.stringify(backendData),
    };
    const record: LaunchRecord = {
      dstack_instance_id: config.instance_id,
      provisioning_data: provisioningData,
      gpu_ids: gpuIds,
    };
    // Synchronously after the spawn, so the launch is never running unrecorded for long.
    writeFileSync(join(home, LAUNCH_RECORD_FILE), JSON.stringify(record));
    return provisioningData;
  }

  /** The recorded launch keyed by `dstackInstanceId`, or null when there is none. */
  async #launchRecordOf(dstackInstanceId: string): Promise<LaunchRecord | null> {
    const suffix = `-${safeDirectoryName(dstackInstanceId)}`;
    let entries: string[];
    try {
      entries = await readdir(this.instancesDir);
    } catch {
      return null;
    }
    for (const entry of entries.filter((name) => name.endsWith(suffix))) {
      const record = await readLaunchRecord(join(this.instancesDir, entry));
      // The suffix may match another id that ends the same way: the record names its own.
      if (record?.dstack_instance_id === dstackInstanceId) return record;
    }
    return null;
  }

  async updateProvisioningData(provisioningData: JobProvisioningData): Promise<JobProvisioningData> {
    if (provisioningData.hostname != null) return provisioningData;
    const backendData = this.#backendDataOf(provisioningData.instance_id, provisioningData.backend_data);
    const { home, pid } = backendData;
    const state = await readShimState(home);
    if (state !== null) {
      const ready: LocalBackendData = { home, pid, agent_ports: { shim: state.http_port } };
      return {
        ...provisioningData,
        hostname: LOCAL_HOSTNAME,
        internal_ip: LOCAL_HOSTNAME,
        backend_data: JSON.stringify(ready),
      };
    }
    // Read the state before checking the pid: a shim that wrote it and then exited still came up.
    if (!(await isShimProcess(pid, home)) && (await readShimState(home)) === null) {
      const log = await shimLogTail(home);
      throw new ProvisioningError(
        `The local shim (pid ${pid}) exited before it started listening${log ? `; the end of ${join(home, 'shim.log')}:\n${log}` : ''}`,
      );
    }
    return provisioningData;
  }

  async terminateInstance(instanceId: string, _region: string, backendData?: string | null): Promise<void> {
    const { home, pid } = this.#backendDataOf(instanceId, backendData);
    if (pid > 0) await stopShim(pid, home, this.#terminationGraceMs);
    // Removes only a directory named after the instance, whatever the backend data says.
    if (basename(home) === instanceId) await rm(home, { recursive: true, force: true });
  }

  /**
   * The instance's backend data; without it (never stored), the home follows
   * from the instance id and there is no known pid.
   */
  #backendDataOf(instanceId: string, backendData: string | null | undefined): LocalBackendData {
    if (backendData) {
      const parsed = JSON.parse(backendData) as Partial<LocalBackendData>;
      if (typeof parsed.home === 'string' && Number.isInteger(parsed.pid)) {
        return parsed as LocalBackendData;
      }
    }
    if (basename(instanceId) !== instanceId || instanceId === '..' || instanceId === '.') {
      throw new Error(`Invalid local instance id ${JSON.stringify(instanceId)}`);
    }
    return { home: resolve(this.instancesDir, instanceId), pid: 0 };
  }
}

/** Job and fleet names are dstack resource names already; this keeps a stray `/` from escaping the directory. */
function safeDirectoryName(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, '-').replace(/^\.+/, '') || 'instance';
}

/** The local backend's Compute, from settings (the configurator builds it from config.yml). */
export function createLocalBackend(settings: LocalBackendSettings = {}): LocalCompute {
  return new LocalCompute(settings);
}
