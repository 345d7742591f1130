/**
 * Turns a run configuration into the job specs the server runs (dstack's job
 * configurators): one job per node (or per provider job), commands,
 * environment, requirements, retry and durations.
 */
import {
  ConfigurationError,
  DEFAULT_STOP_DURATION,
  type JobSpec,
  type ProviderJobSpec,
  parseUnixUser,
  type Requirements,
  type RetrySpec,
  type RunConfiguration,
  type ServiceConfiguration,
} from '@dstack/core';
import {
  DEFAULT_DIND_IMAGE,
  type DefaultImageOptions,
  DSTACK_RESERVED_PORTS,
  defaultJobImage,
} from '@dstack/core/agent-protocol';
import type { StoredRunSpec } from '../db/json-columns.js';
import { replicaGroupsOf } from '../services/service-spec.js';
import { JobVolumeError, jobMountPoints } from '../volumes/job-volumes.js';
import { hostJobCommandLine, jobCommandLine, ShellWordsError } from './job-commands.js';

/** `spot_policy` → `Requirements.spot`: on-demand by default, as in dstack. */
function spotRequirement(policy: RunConfiguration['spot_policy']): boolean | null {
  if (policy === 'spot') return true;
  if (policy === 'auto') return null;
  return false;
}

export function requirementsOf(configuration: RunConfiguration, nodes: number): Requirements {
  return {
    resources: configuration.resources,
    max_price: configuration.max_price ?? null,
    spot: spotRequirement(configuration.spot_policy),
    reservation: configuration.reservation ?? null,
    multinode: nodes > 1,
    backend_options: configuration.backend_options ?? null,
  };
}

function retryOf(configuration: RunConfiguration): RetrySpec | null {
  const retry = configuration.retry;
  if (retry === undefined || retry === false) return null;
  return { on_events: retry.on_events, duration: retry.duration };
}

function containerPorts(configuration: RunConfiguration): number[] {
  if (configuration.type === 'service') return [configuration.port.container_port];
  return [...new Set(configuration.ports.map((port) => port.container_port))];
}

/** dstack's `app_specs`: a task's or dev environment's `ports:` (a service has none), reserved ports left out. */
function appSpecsOf(configuration: RunConfiguration): JobSpec['app_specs'] {
  if (configuration.type === 'service') return [];
  return configuration.ports
    .filter(
      (port) =>
        port.container_port < DSTACK_RESERVED_PORTS.first || port.container_port > DSTACK_RESERVED_PORTS.last,
    )
    .map((port, index) => ({
      port: port.container_port,
      map_to_port: port.local_port,
      app_name: `app_${index}`,
    }));
}

/**
 * `env` entries with a null value take their value from the client's
 * environment in dstack; the CLI fills them in before sending, so a null left
 * here means the user's environment had no such variable: it becomes empty.
 */
function resolvedEnv(env: RunConfiguration['env']): Record<string, string> {
  return Object.fromEntries(Object.entries(env).map(([key, value]) => [key, value ?? '']));
}

/**
 * What keeps a dev environment up once its `init` commands are done, until the job is stopped:
 * the environment is there to be reached over SSH. With `inactivity_duration` the server stops it
 * after that long without SSH connections (the jobs-running pipeline, from the runner's
 * `no_connections_secs`); the job spec does not carry it, the run spec's configuration does, as in dstack.
 * dstack's own idle command: one process that a stop's SIGTERM ends, and the shell with it (an
 * interactive bash ignores SIGTERM itself, and a loop would start its sleep again).
 */
export const DEV_ENVIRONMENT_KEEP_ALIVE = 'tail -f /dev/null';

/** The commands of a run's jobs: a dev environment's `setup` and `init`, then the keep-alive; else `commands`. */
function commandsOf(configuration: RunConfiguration): string[] {
  if (configuration.type !== 'dev-environment') return configuration.commands;
  return [...configuration.setup, ...configuration.init, DEV_ENVIRONMENT_KEEP_ALIVE];
}

/** What differs between the jobs of one replica. */
interface JobShape {
  commands: string[];
  env: Record<string, string>;
  image: string | undefined;
  workingDir: string | undefined;
}

/**
 * The provider's jobs of a task that names a `provider`, or undefined for any other run.
 * The server never loads provider modules (they live on the user's machine): the client
 * expands them into `provider_jobs`, so a provider without them is the client's mistake.
 */
function providerJobsOf(runSpec: StoredRunSpec): ProviderJobSpec[] | undefined {
  const providerJobs = runSpec.provider_jobs ?? undefined;
  const configuration = runSpec.configuration;
  const provider = configuration.type === 'task' ? configuration.provider : undefined;
  if (provider !== undefined && providerJobs === undefined) {
    throw new ConfigurationError(
      `the configuration names provider '${provider}' but the run spec has no provider_jobs: load the provider and send the jobs it creates (dstack apply does)`,
      { path: ['run_spec', 'provider_jobs'] },
    );
  }
  if (provider === undefined && providerJobs !== undefined) {
    throw new ConfigurationError("provider_jobs needs a task configuration with 'provider'", {
      path: ['run_spec', 'provider_jobs'],
    });
  }
  return providerJobs;
}

/** One shape per job of a replica: per provider job, else per node. */
function jobShapes(configuration: RunConfiguration, providerJobs: ProviderJobSpec[] | undefined): JobShape[] {
  const configurationEnv = resolvedEnv(configuration.env);
  if (providerJobs) {
    return providerJobs.map((job) => ({
      commands: job.commands,
      env: { ...configurationEnv, ...job.env },
      image: job.image ?? configuration.image,
      workingDir: job.working_dir ?? configuration.working_dir,
    }));
  }
  const nodes = (configuration.type === 'task' ? configuration.nodes : undefined) ?? 1;
  return Array.from({ length: nodes }, () => ({
    commands: commandsOf(configuration),
    env: configurationEnv,
    image: configuration.image,
    workingDir: configuration.working_dir,
  }));
}

/**
 * The argv of a job that runs as a process on its host, without a container (job-runtime.ts: a
 * Slurm allocation, a shim's process runtime on the local backend or a host without Docker;
 * job-commands.ts's `hostJobCommandLine`), rebuilt from the run spec its job spec came from: the
 * stored job spec keeps dstack's command line for its image.
 */
export function hostJobCommands(
  runSpec: StoredRunSpec,
  jobSpec: Pick<JobSpec, 'job_num' | 'replica_group'>,
): string[] {
  const { configuration } = replicaConfiguration(runSpec.configuration, jobSpec.replica_group ?? undefined);
  const shape = jobShapes(configuration, providerJobsOf(runSpec))[jobSpec.job_num];
  if (!shape) throw new Error(`the run spec has no job ${jobSpec.job_num}`);
  return hostJobCommandLine({ ...configuration, image: shape.image }, shape.commands);
}

/**
 * The job specs of one replica of a run: one per provider job for a task with a `provider`,
 * else one per node. Throws `ConfigurationError` (HTTP 400) when `provider` and
 * `provider_jobs` do not come together.
 */
export function buildJobSpecs(
  runName: string,
  runSpec: StoredRunSpec,
  replicaNum = 0,
  baseImage: BaseImage = {},
  replicaGroupName?: string,
): JobSpec[] {
  const { configuration, replicaGroup } = replicaConfiguration(runSpec.configuration, replicaGroupName);
  const providerJobs = providerJobsOf(runSpec);
  const shapes = jobShapes(configuration, providerJobs);
  // Provider jobs are independent of each other; only nodes of one task form a cluster.
  const clusterSize = providerJobs ? 1 : shapes.length;
  const code = codeFieldsOf(runSpec);
  const maxDuration = configuration.max_duration;
  const stopDuration = configuration.stop_duration;
  // No `image:`: dstack's dind image for `docker: true`, else its base image (`nvcc:` picks the variant).
  const { dindImage, ...baseImageOptions } = baseImage;
  const defaultImage =
    configuration.docker === true
      ? (dindImage ?? DEFAULT_DIND_IMAGE)
      : defaultJobImage({ ...baseImageOptions, nvcc: configuration.nvcc });
  return shapes.map((shape, jobNum) => ({
    job_name: `${runName}-${jobNum}-${replicaNum}`,
    job_num: jobNum,
    replica_num: replicaNum,
    jobs_per_replica: shapes.length,
    commands: commandLineOf({ ...configuration, image: shape.image }, shape.commands),
    env: shape.env,
    image_name: shape.image ?? defaultImage,
    user: configuration.user == null ? null : parseUnixUser(configuration.user),
    // Docker-in-Docker needs a privileged container: dstack's `docker: true` overrides `privileged`.
    privileged: configuration.docker === true || configuration.privileged,
    working_dir: shape.workingDir ?? runSpec.working_dir ?? null,
    max_duration: typeof maxDuration === 'number' && maxDuration > 0 ? maxDuration : null,
    stop_duration: stopDuration === 'off' ? null : (stopDuration ?? DEFAULT_STOP_DURATION),
    registry_auth: configuration.registry_auth ?? null,
    requirements: requirementsOf(configuration, clusterSize),
    retry: retryOf(configuration),
    utilization_policy: configuration.utilization_policy ?? null,
    ports: containerPorts(configuration),
    app_specs: appSpecsOf(configuration),
    ...code,
    ...volumesOf(configuration, jobNum),
    ...(replicaGroup === undefined ? {} : { replica_group: replicaGroup }),
  }));
}

/** The server's image settings: the base image's repository and versions, and the dind image. */
export type BaseImage = Omit<DefaultImageOptions, 'nvcc'> & { dindImage?: string | null };

/**
 * The job's argv (job-commands.ts). An entrypoint no shell could split is the configuration's
 * mistake; so is an image without `commands` or `entrypoint`, whose own ENTRYPOINT and CMD dstack
 * would read from its registry and this server does not.
 */
function commandLineOf(configuration: RunConfiguration, shellCommands: string[]): string[] {
  let commandLine: string[];
  try {
    commandLine = jobCommandLine(configuration, shellCommands);
  } catch (error) {
    if (!(error instanceof ShellWordsError)) throw error;
    throw new ConfigurationError(error.message, { path: ['run_spec', 'configuration', 'entrypoint'] });
  }
  if (commandLine.length === 0) {
    throw new ConfigurationError(
      "Could not determine what command to run. Please specify either `commands` or `entrypoint` in your run configuration (this server does not run an image's own ENTRYPOINT and CMD)",
      { path: ['run_spec', 'configuration', 'commands'] },
    );
  }
  return commandLine;
}

/**
 * The jobs a plan shows and checks (secrets, volumes): replica 0 of each replica group of a
 * service (dstack's plan batches), else the run's jobs.
 */
export function planJobSpecs(runName: string, runSpec: StoredRunSpec, baseImage: BaseImage = {}): JobSpec[] {
  const configuration = runSpec.configuration;
  if (configuration.type !== 'service') return buildJobSpecs(runName, runSpec, 0, baseImage);
  return replicaGroupsOf(configuration).flatMap((group) =>
    buildJobSpecs(runName, runSpec, 0, baseImage, group.name),
  );
}

/**
 * A new service's first replicas: each group's minimum (none for `0..N`), the replica numbers
 * running on across groups as dstack numbers them.
 */
export function initialReplicaJobSpecs(
  runName: string,
  runSpec: StoredRunSpec,
  service: ServiceConfiguration,
  baseImage: BaseImage = {},
): JobSpec[] {
  let replicaNum = 0;
  return replicaGroupsOf(service).flatMap((group) =>
    Array.from({ length: group.range.min }, () =>
      buildJobSpecs(runName, runSpec, replicaNum++, baseImage, group.name),
    ).flat(),
  );
}

/**
 * What a replica's jobs are built from: a service's configuration with its replica group's own
 * fields (dstack's replica groups: commands and resources of the group's own, the rest where the
 * service leaves it unset), and the group's name; any other run's configuration as it is.
 * Without a name, the first group (the plan of a service without groups).
 */
function replicaConfiguration(
  configuration: RunConfiguration,
  groupName: string | undefined,
): { configuration: RunConfiguration; replicaGroup: string | undefined } {
  if (configuration.type !== 'service') return { configuration, replicaGroup: undefined };
  const groups = replicaGroupsOf(configuration);
  const group =
    groupName === undefined ? groups[0] : groups.find((candidate) => candidate.name === groupName);
  if (!group) throw new Error(`the service has no replica group '${groupName}'`);
  const own = group.configured;
  if (!own) return { configuration, replicaGroup: group.name };
  return {
    configuration: {
      ...configuration,
      commands: own.commands,
      resources: own.resources,
      spot_policy: own.spot_policy ?? configuration.spot_policy,
      reservation: own.reservation ?? configuration.reservation,
      image: own.image ?? configuration.image,
      python: own.python ?? configuration.python,
      nvcc: own.nvcc ?? configuration.nvcc,
      docker: own.docker ?? configuration.docker,
      privileged: own.privileged ?? configuration.privileged,
    },
    replicaGroup: group.name,
  };
}

/** The job's `volumes`, names interpolated for its number; absent for a run without volumes. */
function volumesOf(configuration: RunConfiguration, jobNum: number): Partial<JobSpec> {
  if (configuration.volumes.length === 0) return {};
  try {
    return { volumes: jobMountPoints(configuration.volumes, jobNum) };
  } catch (error) {
    if (error instanceof JobVolumeError) {
      throw new ConfigurationError(error.message, { path: ['run_spec', 'configuration', 'volumes'] });
    }
    throw error;
  }
}

/**
 * `single_branch`, defaulting as dstack's job configurators do: a dev environment clones every
 * branch (the user works in it), a task or service only the one it runs.
 */
function singleBranchOf(configuration: StoredRunSpec['configuration']): boolean {
  return configuration.single_branch ?? configuration.type !== 'dev-environment';
}

/**
 * Where the job's code comes from and where it goes (dstack's job configurator): the run's repo
 * at `repos[0].path` (relative to the working directory) and its `files:` archives. Absent for a
 * run without them, so their job specs stay as they were.
 */
function codeFieldsOf(runSpec: StoredRunSpec): Partial<JobSpec> {
  const fields: Partial<JobSpec> = {};
  const repoData = runSpec.repo_data;
  if (repoData && repoData.repo_type !== 'virtual') {
    const repo = runSpec.configuration.repos[0];
    fields.repo_data = repoData;
    fields.repo_code_hash = runSpec.repo_code_hash ?? null;
    fields.repo_dir = repo?.path ?? runSpec.repo_dir ?? '.';
    fields.repo_exists_action = repo?.if_exists ?? 'error';
    fields.single_branch = singleBranchOf(runSpec.configuration);
  }
  if (runSpec.file_archives && runSpec.file_archives.length > 0) fields.file_archives = runSpec.file_archives;
  return fields;
}
