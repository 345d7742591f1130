import {
  BackendError,
  type Capability,
  type Compute,
  type GetOffersOptions,
  type InstanceOfferWithAvailability,
  type InstanceStatusAtProvider,
  type JobProvisioningData,
  NoCapacityError,
  ProvisioningError,
  type Requirements,
  type RunJobParams,
  shellQuote,
} from '@dstack/core';
import { isDefaultJobImage } from '@dstack/core/agent-protocol';
import { buildBatchScript, JOB_FILES } from './slurm-batch-script.js';
import {
  cancelJob,
  hasPyxis,
  isFinalJobState,
  jobState,
  listNodes,
  listPartitions,
  nodeAddress,
  queuedJobNamed,
  type SlurmNode,
  submitBatchScript,
} from './slurm-commands.js';
import { SLURM_BACKEND_TYPE, type SlurmClusterConfig, type SlurmConfig } from './slurm-config.js';
import { type SlurmLogin, type SlurmLoginSession, withLoginSession } from './slurm-login.js';
import {
  clusterOffers,
  eligiblePartitions,
  gpuModelsByPartition,
  requestedResources,
} from './slurm-offers.js';
import { installRunnerRuntime, localRunnerRuntime } from './slurm-runner-runtime.js';

/**
 * What this Compute implements, declared on the plugin descriptor too: none of the optional
 * capabilities yet. Not `multinode`: dstack runs a multi-node task as one allocation over several
 * nodes (`run_jobs`), which this server's contract has no call for yet.
 */
export const SLURM_CAPABILITIES: readonly Capability[] = [];

/** Where the login node keeps each job's directory, relative to the user's home. */
export const CLUSTER_JOBS_DIRECTORY = '.dstack/slurm/jobs';

/** How long nodes and partitions answer offers again (dstack caches them 600 s; nodes change). */
const DISCOVERY_TTL_MS = 60_000;
/** Slurm's limit is larger; dstack keeps names to 64 characters. */
const JOB_NAME_MAX_LENGTH = 64;

/** Settings of `createSlurmBackend`. */
export interface SlurmBackendSettings {
  /** The backend's config with each cluster's login, as the configurator reads it. Required. */
  config: SlurmConfig;
  /** Limit on reaching a login node and logging in, in milliseconds. Default 10 000. */
  loginTimeoutMs?: number;
}

/** What `backend_data` of the provisioning data holds. */
export interface SlurmBackendData {
  /** The cluster (the region). */
  cluster: string;
  job_id: string;
  job_name: string;
  /** The job's directory on the cluster. */
  job_directory: string;
  /** The runner's HTTP port on the node, once it listens. */
  agent_ports?: { runner: number };
}

interface ClusterDiscovery {
  nodes: SlurmNode[];
  partitions: string[];
  pyxis: boolean;
  at: number;
}

function loginOf(cluster: SlurmClusterConfig): SlurmLogin {
  return {
    hostname: cluster.hostname,
    port: cluster.port ?? 22,
    user: cluster.user,
    privateKey: cluster.private_key.content,
  };
}

function backendDataOf(data: JobProvisioningData): SlurmBackendData {
  const parsed = JSON.parse(data.backend_data ?? 'null') as SlurmBackendData | null;
  if (!parsed?.job_id)
    throw new BackendError(`instance ${data.instance_id} has no Slurm job in its backend data`);
  return parsed;
}

/**
 * Runs each job as a Slurm batch job on one of the configured clusters (dstack's `slurm`
 * backend): offers from the nodes (`scontrol show node`, `sinfo`), `sbatch` over SSH on the login
 * node, the runner started inside the allocation as a process, state from `squeue` (then
 * `scontrol show job`, `sacct`), `scancel` to stop.
 */
export class SlurmCompute implements Compute {
  readonly type = SLURM_BACKEND_TYPE;
  readonly capabilities = SLURM_CAPABILITIES;
  readonly config: SlurmConfig;
  readonly #loginTimeoutMs: number | undefined;
  readonly #discovery = new Map<string, Promise<ClusterDiscovery>>();
  /** The clusters whose `srun` was seen to have pyxis' options (`--container-image`). */
  readonly #pyxisClusters = new Set<string>();

  constructor(settings: SlurmBackendSettings) {
    this.config = settings.config;
    this.#loginTimeoutMs = settings.loginTimeoutMs;
  }

  #cluster(name: string): SlurmClusterConfig {
    const cluster = this.config.clusters.find((each) => each.name === name);
    if (!cluster) throw new BackendError(`the slurm backend has no cluster "${name}"`);
    return cluster;
  }

  #withSession<T>(cluster: SlurmClusterConfig, body: (session: SlurmLoginSession) => Promise<T>): Promise<T> {
    return withLoginSession(loginOf(cluster), body, this.#loginTimeoutMs);
  }

  /** The cluster's nodes, partitions and whether it has pyxis, asked at most every minute. */
  #discover(cluster: SlurmClusterConfig): Promise<ClusterDiscovery> {
    const cached = this.#discovery.get(cluster.name);
    if (cached) return cached;
    const discovery = this.#withSession(cluster, async (session) => ({
      nodes: await listNodes(session),
      partitions: await listPartitions(session),
      pyxis: await hasPyxis(session),
      at: Date.now(),
    }));
    this.#discovery.set(cluster.name, discovery);
    discovery.then(
      (found) =>
        found.pyxis ? this.#pyxisClusters.add(cluster.name) : this.#pyxisClusters.delete(cluster.name),
      () => undefined,
    );
    const forget = () => {
      if (this.#discovery.get(cluster.name) === discovery) this.#discovery.delete(cluster.name);
    };
    discovery.then(() => setTimeout(forget, DISCOVERY_TTL_MS).unref(), forget);
    return discovery;
  }

  /**
   * One offer per node of every cluster that fits, sized to the request. A cluster that does not
   * answer is left out (as dstack logs and skips it), unless none answers: then the error.
   */
  async getOffers(
    requirements: Requirements,
    _options: GetOffersOptions = {},
  ): Promise<InstanceOfferWithAvailability[]> {
    const results = await Promise.allSettled(
      this.config.clusters.map(async (cluster) => {
        const discovery = await this.#discover(cluster);
        return clusterOffers(
          cluster,
          gpuModelsByPartition(cluster),
          discovery.nodes,
          discovery.partitions,
          requirements,
        );
      }),
    );
    const failures = results.filter((result) => result.status === 'rejected');
    if (failures.length === results.length && failures[0]) throw failures[0].reason;
    return results.flatMap((result) => (result.status === 'fulfilled' ? result.value : []));
  }

  /**
   * Jobs run as processes of the allocation: an image could run only through pyxis
   * (`srun --container-image`, which offers detect), and this backend does not drive it yet.
   */
  imageRefusal(): string | null {
    const withPyxis = [...this.#pyxisClusters];
    const pyxis =
      withPyxis.length > 0
        ? `cluster ${withPyxis.join(', ')} has pyxis (srun --container-image), which this backend does not use yet`
        : 'no cluster of the backend was seen with pyxis (srun --container-image)';
    return `the slurm backend runs jobs as processes in their Slurm allocation, without a container: ${pyxis}`;
  }

  /**
   * Submits the job's batch script and returns at once (the node is known once Slurm starts it).
   * Idempotent on `params.instanceId`: the job's directory records its Slurm job id, and the job
   * is named after the instance, so a retried launch finds the first job.
   */
  async runJob(params: RunJobParams): Promise<JobProvisioningData> {
    const cluster = this.#cluster(params.offer.region);
    const jobSpec = params.job.job_spec;
    if (!runsWithoutImage(jobSpec.image_name)) {
      throw new BackendError(`image ${jobSpec.image_name}: ${this.imageRefusal()}`);
    }
    if (jobSpec.registry_auth != null) {
      throw new BackendError('registry_auth: the slurm backend pulls no images');
    }
    const requested = requestedResources(params.requirements);
    const gpuModels = gpuModelsByPartition(cluster);
    const discovery = await this.#discover(cluster);
    let partitions = [...eligiblePartitions(cluster, gpuModels, discovery.partitions, requested)];
    const zones = params.offer.availability_zones;
    if (zones) partitions = partitions.filter((partition) => zones.includes(partition));
    if (partitions.length === 0) {
      throw new NoCapacityError(`cluster ${cluster.name} has no partition for this job`);
    }
    const jobName = `${params.run.run_spec.run_name ?? 'dstack'}-${params.instanceId}`.slice(
      -JOB_NAME_MAX_LENGTH,
    );
    return this.#withSession(cluster, async (session) => {
      const home = await session.homeDirectory();
      const jobDirectory = `${home}/${CLUSTER_JOBS_DIRECTORY}/${params.instanceId}`;
      const provisioningData = (jobId: string) =>
        this.#provisioningData(cluster, params, {
          cluster: cluster.name,
          job_id: jobId,
          job_name: jobName,
          job_directory: jobDirectory,
        });
      const recorded = (
        await session.run(
          'reading the job id',
          `cat ${shellQuote(`${jobDirectory}/${JOB_FILES.jobId}`)} 2>/dev/null || true`,
        )
      ).trim();
      const existing = recorded || (await queuedJobNamed(session, jobName));
      if (existing) return provisioningData(existing);

      await authorizeForJumps(session, [params.projectSshPublicKey, params.run.run_spec.ssh_key_pub]);
      const runtime = await localRunnerRuntime();
      const runtimeRoot = await installRunnerRuntime(session, runtime);
      await session.run(
        'writing the runner token',
        `umask 077 && mkdir -p ${shellQuote(jobDirectory)} && cat > ${shellQuote(`${jobDirectory}/${JOB_FILES.token}`)}`,
        params.agentToken,
      );
      const script = buildBatchScript({
        jobName,
        jobDirectory,
        partitions,
        resources: requested,
        runtimeRoot,
        runtimeManifest: runtime.manifest,
        sshAuthorizedKeys: [params.projectSshPublicKey],
      });
      const jobId = await submitBatchScript(session, script).catch((error: unknown) => {
        throw new NoCapacityError(`cluster ${cluster.name} refused the job: ${(error as Error).message}`, {
          cause: error,
        });
      });
      await session.run(
        'recording the job id',
        `printf '%s\\n' ${shellQuote(jobId)} > ${shellQuote(`${jobDirectory}/${JOB_FILES.jobId}`)}`,
      );
      return provisioningData(jobId);
    });
  }

  #provisioningData(
    cluster: SlurmClusterConfig,
    params: RunJobParams,
    backendData: SlurmBackendData,
  ): JobProvisioningData {
    return {
      backend: SLURM_BACKEND_TYPE,
      instance_type: params.offer.instance,
      instance_id: backendData.job_id,
      hostname: null,
      internal_ip: null,
      public_ip_enabled: false,
      region: cluster.name,
      availability_zone: null,
      price: 0,
      username: cluster.user,
      ssh_port: null,
      dockerized: false,
      ssh_proxy: { hostname: cluster.hostname, port: cluster.port ?? 22, username: cluster.user },
      backend_data: JSON.stringify(backendData),
    } as JobProvisioningData;
  }

  /**
   * Looks the job up once: pending, it stays as it is; running with its runner's ports written,
   * the node's address and the runner's SSH port are filled in; ended (or forgotten), the launch
   * failed, with the job's last output lines.
   */
  async updateProvisioningData(provisioningData: JobProvisioningData): Promise<JobProvisioningData> {
    const data = backendDataOf(provisioningData);
    const cluster = this.#cluster(data.cluster);
    return this.#withSession(cluster, async (session) => {
      const state = await jobState(session, data.job_id);
      if (state === null || isFinalJobState(state.state)) {
        const output = await session.exec(
          `tail -n 10 ${shellQuote(`${data.job_directory}/${JOB_FILES.output}`)} 2>/dev/null`,
        );
        throw new ProvisioningError(
          `Slurm job ${data.job_id} ${state === null ? 'is gone' : `ended ${state.state}`} before its runner answered` +
            (output.stdout.trim() ? `; its output ends:\n${output.stdout.trim()}` : ''),
        );
      }
      if (state.state !== 'RUNNING' || state.nodes === null) return provisioningData;
      const ports = await session.exec(
        `cat ${shellQuote(`${data.job_directory}/${JOB_FILES.sshPort}`)} ${shellQuote(`${data.job_directory}/${JOB_FILES.httpPort}`)} 2>/dev/null`,
      );
      const [sshPort, httpPort] = ports.stdout.trim().split('\n').map(Number);
      if (ports.exitStatus !== 0 || !Number.isInteger(sshPort) || !Number.isInteger(httpPort))
        return provisioningData;
      const address = await nodeAddress(session, state.nodes.split(',')[0] ?? state.nodes);
      return {
        ...provisioningData,
        hostname: address,
        internal_ip: address,
        ssh_port: sshPort as number,
        availability_zone: null,
        backend_data: JSON.stringify({ ...data, agent_ports: { runner: httpPort as number } }),
      };
    });
  }

  /** `running` while Slurm runs or schedules the job, else `gone`. */
  async instanceStatus(provisioningData: JobProvisioningData): Promise<InstanceStatusAtProvider> {
    const data = backendDataOf(provisioningData);
    const state = await this.#withSession(this.#cluster(data.cluster), (session) =>
      jobState(session, data.job_id),
    );
    return state !== null && !isFinalJobState(state.state) ? 'running' : 'gone';
  }

  /** Cancels the Slurm job and removes its directory; a job already gone is no error. */
  async terminateInstance(instanceId: string, region: string, backendData?: string | null): Promise<void> {
    const data = JSON.parse(backendData ?? 'null') as SlurmBackendData | null;
    await this.#withSession(this.#cluster(region), async (session) => {
      await cancelJob(session, data?.job_id ?? instanceId);
      if (data?.job_directory)
        await session.run('removing the job directory', `rm -rf ${shellQuote(data.job_directory)}`);
    });
  }
}

/**
 * Whether a job of this image runs as a process on the node: dstack's base image (a default
 * image's tag, or any tag of `dstackai/base`), which stands for "no image of the user's".
 */
function runsWithoutImage(imageName: string): boolean {
  return isDefaultJobImage(imageName) || /(^|\/)dstackai\/base:[^/]+$/.test(imageName);
}

/**
 * Lets the keys log in to the login node only to jump through it (dstack writes them with
 * `command="/bin/false"`): the server's tunnel to the runner goes through the login node.
 */
async function authorizeForJumps(
  session: SlurmLoginSession,
  keys: readonly (string | null | undefined)[],
): Promise<void> {
  const lines = keys.map((key) => key?.trim()).filter((key): key is string => Boolean(key));
  const script = [
    'set -eu',
    'mkdir -p ~/.ssh && chmod 700 ~/.ssh && touch ~/.ssh/authorized_keys && chmod 600 ~/.ssh/authorized_keys',
    `for key in ${lines.map(shellQuote).join(' ')}; do`,
    '  grep -qF "$key" ~/.ssh/authorized_keys || echo "command=\\"/bin/false\\" $key" >> ~/.ssh/authorized_keys',
    'done',
  ].join('\n');
  await session.run('authorizing the project key on the login node', script);
}

/** The slurm backend's Compute, for use without a server (tests, scripts). */
export function createSlurmBackend(settings: SlurmBackendSettings): SlurmCompute {
  return new SlurmCompute(settings);
}
