import type { RunnerSubmission } from '@dstack/core/agent-protocol';

export interface JobEnvironmentInput {
  /** The runner's own environment, which the job inherits. */
  baseEnv: Readonly<Record<string, string | undefined>>;
  submission: RunnerSubmission;
  repoDir: string;
  workingDir: string;
  mpiHostfilePath: string;
  /** The job user's HOME, USER and LOGNAME, over the runner's own; undefined removes a variable. */
  userEnv?: Readonly<Record<string, string | undefined>>;
}

/**
 * The job's environment, layered as dstack's runner does: the runner's own variables, then the
 * job user's login variables, then the DSTACK_* variables, then secrets, then the job spec's
 * `env` (which wins).
 */
export function buildJobEnvironment(input: JobEnvironmentInput): Record<string, string> {
  const { submission } = input;
  const cluster = submission.cluster_info;
  const jobIps = cluster?.job_ips ?? [];
  const nodesNumber = jobIps.length > 0 ? jobIps.length : submission.job_spec.jobs_per_replica;
  const gpusPerNode = cluster?.gpus_per_job ?? 0;
  // Each node's own count when the server sends them (nodes may differ); else every node like this one.
  const gpusNumber = cluster?.gpus_per_node?.length
    ? cluster.gpus_per_node.reduce((sum, gpus) => sum + gpus, 0)
    : gpusPerNode * nodesNumber;
  const environment: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.baseEnv)) {
    if (value !== undefined) {
      environment[name] = value;
    }
  }
  for (const [name, value] of Object.entries(input.userEnv ?? {})) {
    if (value === undefined) {
      delete environment[name];
    } else {
      environment[name] = value;
    }
  }
  Object.assign(environment, {
    DSTACK_RUN_NAME: submission.run.run_name,
    DSTACK_RUN_ID: submission.run.id,
    DSTACK_JOB_ID: submission.job_submission.id,
    DSTACK_REPO_ID: submission.run.run_spec?.repo_id ?? '',
    DSTACK_REPO_DIR: input.repoDir,
    DSTACK_WORKING_DIR: input.workingDir,
    DSTACK_GPUS_NUM: String(gpusNumber),
    DSTACK_GPUS_PER_NODE: String(gpusPerNode),
    DSTACK_NODES_NUM: String(nodesNumber),
    DSTACK_NODE_RANK: String(submission.job_spec.job_num),
    DSTACK_MASTER_NODE_IP: cluster?.master_job_ip ?? '',
    DSTACK_NODES_IPS: jobIps.join('\n'),
    DSTACK_MPI_HOSTFILE: input.mpiHostfilePath,
  });
  Object.assign(environment, submission.secrets ?? {});
  Object.assign(environment, submission.job_spec.env);
  return environment;
}

/** An MPI hostfile: one `ip slots=N` line per node (N = GPUs per node, at least 1). */
export function formatMpiHostfile(submission: RunnerSubmission): string {
  const cluster = submission.cluster_info;
  const slots = Math.max(cluster?.gpus_per_job ?? 0, 1);
  return (cluster?.job_ips ?? []).map((ip) => `${ip} slots=${slots}\n`).join('');
}
