/**
 * The batch script of a dstack job (dstack's `_run_slurm_job`): `#SBATCH` directives that ask for
 * what the job needs, then the runner started in the allocation as a process of the job (no
 * container: pyxis is not there). The runner listens for SSH on a free port of the node and writes
 * its ports into the job's directory in the shared home, where the backend reads them; the server
 * reaches it through the login node (`ssh_proxy`), as dstack reaches its runner's sshd.
 */
import { shellQuote } from '@dstack/core';
import { RUNNER_TOKEN_ENV } from '@dstack/core/agent-protocol';
import { type PortableRuntimeManifest, runtimeRunnerCommand } from '@dstack/runner';
import type { RequestedResources } from './slurm-offers.js';

/** Files of a job's directory on the cluster. */
export const JOB_FILES = {
  /** The runner's agent token (0600), read into its environment by the script. */
  token: 'runner-token',
  /** The runner's HTTP port, written by the runner. */
  httpPort: 'http-port',
  /** The runner's SSH port, written by the runner. */
  sshPort: 'ssh-port',
  /** The job's output (the runner's own log lines). */
  output: 'slurm.out',
  /** The Slurm job id, written after `sbatch` (a retried launch finds the job by it). */
  jobId: 'job-id',
} as const;

export interface BatchScriptOptions {
  /** `--job-name`. */
  jobName: string;
  /** The job's directory on the cluster (absolute, in the shared home). */
  jobDirectory: string;
  /** `--partition`: the partitions the job may run in. */
  partitions: readonly string[];
  resources: RequestedResources;
  /** The runner runtime's root on the cluster, and its manifest. */
  runtimeRoot: string;
  runtimeManifest: PortableRuntimeManifest;
  /** Public keys the runner's SSH port accepts (the project's key). */
  sshAuthorizedKeys: readonly string[];
}

export function buildBatchScript(options: BatchScriptOptions): string {
  const { resources } = options;
  const directory = options.jobDirectory;
  const file = (name: string) => shellQuote(`${directory}/${name}`);
  const directives = [
    `--job-name=${options.jobName}`,
    `--output=${directory}/${JOB_FILES.output}`,
    '--no-requeue',
    `--partition=${options.partitions.join(',')}`,
    '--nodes=1',
    '--ntasks-per-node=1',
    `--cpus-per-task=${resources.cpuCount}`,
    `--mem=${resources.memoryMib}M`,
    ...(resources.gpuCount > 0 ? [`--gres=gpu:${resources.gpuCount}`] : []),
  ].map((directive) => `#SBATCH ${directive}`);
  const runner = runtimeRunnerCommand(options.runtimeManifest, options.runtimeRoot).map(shellQuote).join(' ');
  const keys = options.sshAuthorizedKeys
    .map((key) => ` --ssh-authorized-key ${shellQuote(key.trim())}`)
    .join('');
  return [
    '#!/bin/sh',
    ...directives,
    'set -eu',
    // The runner's home (the job's working copy) on the node's own disk, removed at the end.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion, not a template
    'home="${TMPDIR:-/tmp}/dstack-runner-$SLURM_JOB_ID"',
    'mkdir -p "$home"',
    `${RUNNER_TOKEN_ENV}="$(cat ${file(JOB_FILES.token)})"`,
    `export ${RUNNER_TOKEN_ENV}`,
    // Not exec: the clean-up runs once the runner ends (scancel sends it SIGTERM first).
    `${runner} start --home "$home" --http-port 0 --port-file ${file(JOB_FILES.httpPort)}` +
      ` --ssh-port 0 --ssh-port-file ${file(JOB_FILES.sshPort)}${keys} || status=$?`,
    'rm -rf "$home"',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion, not a template
    'exit "${status:-0}"',
    '',
  ].join('\n');
}
