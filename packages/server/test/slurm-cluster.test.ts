/**
 * A task on a real Slurm cluster (the one-node cluster of `scripts/services/ensure-slurm.sh`):
 * a real server with @dstack/backend-slurm logs in to the login node (an sshd on loopback) with
 * the key config.yml names, `dstack offer` lists the node, `dstack apply` submits the job with
 * `sbatch` and streams its output from the runner the batch script started in the allocation,
 * reached through the login node; the job is in `squeue` while it runs, `dstack stop` cancels it,
 * and nothing of the suite is left in `squeue`. Skipped outside CI when no cluster answers,
 * failing under CI=true. What is tested is the backend, not the database: SQLite only.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import slurmPlugin from '@dstack/backend-slurm';
import type { Run } from '@dstack/core';
import { findSlurmTestCluster, type SlurmTestCluster, slurmTestBackendConfig } from '@dstack/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { killRunningDstack, requireBuiltDstack, runDstack } from './dstack-cli.js';
import {
  ADMIN_TOKEN,
  type HarnessServer,
  makeTempDir,
  startHarnessServer,
  waitFor,
} from './server-harness.js';

const RUN_TIMEOUT_MS = 120_000;
const execFileAsync = promisify(execFile);

describe('tasks on a Slurm cluster', async () => {
  const cluster = await findSlurmTestCluster(slurmPlugin);
  if (typeof cluster === 'string') {
    it.skip(cluster, () => {});
    return;
  }
  const login: SlurmTestCluster = cluster;
  const temp = makeTempDir('dstack-slurm-e2e-');
  const work = join(temp.dir, 'work');
  const cliDir = join(temp.dir, 'cli');
  let harness: HarnessServer;
  const submittedJobIds: string[] = [];

  /** `squeue` on the login node as the backend's user (OpenSSH's client): `jobid state name` lines. */
  async function squeue(): Promise<string> {
    const { stdout } = await execFileAsync('ssh', [
      ...['-i', login.privateKeyPath, '-p', String(login.port)],
      ...[
        '-o',
        'BatchMode=yes',
        '-o',
        'StrictHostKeyChecking=no',
        '-o',
        'UserKnownHostsFile=/dev/null',
        '-o',
        'LogLevel=ERROR',
      ],
      `${login.user}@${login.hostname}`,
      "squeue -h -o '%i %T %j'",
    ]);
    return stdout;
  }

  /** Whether `squeue`'s lines list the job (other suites may run jobs on the cluster meanwhile). */
  const inQueue = (lines: string, jobId: string) =>
    lines.split('\n').some((line) => line.startsWith(`${jobId} `));

  const dstack = (args: string[]) => runDstack(args, { cwd: work, env: { DSTACK_CLI_CONFIG_DIR: cliDir } });

  function slurmJobIdOf(run: Run): string {
    const id = run.latest_job_submission?.job_provisioning_data?.instance_id;
    if (!id) throw new Error(`run ${run.run_spec.run_name} has no Slurm job`);
    submittedJobIds.push(id);
    return id;
  }

  function writeTask(file: string, name: string, commands: string[]): void {
    writeFileSync(
      join(work, file),
      stringify({ type: 'task', name, commands, resources: { cpu: 1, memory: '0.5GB..' } }),
    );
  }

  beforeAll(async () => {
    requireBuiltDstack();
    mkdirSync(work, { recursive: true });
    mkdirSync(cliDir, { recursive: true });
    harness = await startHarnessServer({
      dir: join(temp.dir, 'server'),
      // The key as a file of the server, as an admin's config.yml names it.
      config: {
        projects: [
          { name: 'main', backends: [slurmTestBackendConfig(cluster, { path: cluster.privateKeyPath })] },
        ],
      },
    });
    writeFileSync(
      join(cliDir, 'config.yml'),
      stringify({ projects: [{ name: 'main', url: harness.server.url, token: ADMIN_TOKEN, default: true }] }),
    );
  }, RUN_TIMEOUT_MS);

  afterAll(async () => {
    killRunningDstack();
    await harness?.terminateFleetsAndClose();
    temp.remove();
    // Whatever a failed test left: its job must not outlive the suite on the cluster.
    await waitFor(
      "the suite's Slurm jobs to leave squeue",
      async () => {
        const lines = await squeue();
        return submittedJobIds.some((jobId) => inQueue(lines, jobId)) ? null : true;
      },
      RUN_TIMEOUT_MS,
    );
  }, RUN_TIMEOUT_MS);

  it(
    'offers the node, runs a task to done with its output streamed, and leaves nothing in squeue',
    async () => {
      const offer = await dstack(['offer', '-b', 'slurm']);
      expect(offer.code).toBe(0);
      expect(offer.stdout).toMatch(/slurm\s+.*test-cluster.*dstack-node/);

      writeTask('hello.dstack.yml', 'slurm-hello', [
        'echo "hello from Slurm job $SLURM_JOB_ID on $SLURMD_NODENAME"',
      ]);
      const applied = await dstack(['apply', '-f', 'hello.dstack.yml', '-y']);
      expect(applied.stderr).toBe('');
      expect(applied.code, applied.stdout).toBe(0);
      const run = await harness.waitForRun('slurm-hello', ['done'], RUN_TIMEOUT_MS);
      const jobId = slurmJobIdOf(run);
      expect(applied.stdout).toContain(`hello from Slurm job ${jobId} on dstack-node`);
      await waitFor(
        `Slurm job ${jobId} to leave squeue`,
        async () => (inQueue(await squeue(), jobId) ? null : true),
        RUN_TIMEOUT_MS,
      );
    },
    RUN_TIMEOUT_MS,
  );

  it(
    'shows the running job in squeue, and dstack stop cancels it',
    async () => {
      writeTask('long.dstack.yml', 'slurm-long', ['echo started', 'sleep 600']);
      const applied = await dstack(['apply', '-f', 'long.dstack.yml', '-y', '-d']);
      expect(applied.code, applied.stdout).toBe(0);
      const running = await harness.waitForRun('slurm-long', ['running'], RUN_TIMEOUT_MS);
      const jobId = slurmJobIdOf(running);
      expect(await squeue()).toMatch(new RegExp(`^${jobId} RUNNING slurm-long-`, 'm'));
      await waitFor(
        'the task to print',
        async () => ((await harness.logs('slurm-long')).includes('started') ? true : null),
        RUN_TIMEOUT_MS,
      );

      const stopped = await dstack(['stop', '-y', 'slurm-long']);
      expect(stopped.code).toBe(0);
      const finished = await harness.waitForRun('slurm-long', ['terminated'], RUN_TIMEOUT_MS);
      expect(finished.latest_job_submission?.termination_reason).toBe('terminated_by_user');
      await waitFor(
        `Slurm job ${jobId} to leave squeue`,
        async () => (inQueue(await squeue(), jobId) ? null : true),
        RUN_TIMEOUT_MS,
      );
    },
    RUN_TIMEOUT_MS,
  );

  it('refuses image: at plan time, saying that jobs run without a container', async () => {
    writeFileSync(
      join(work, 'image.dstack.yml'),
      stringify({
        type: 'task',
        name: 'slurm-image',
        image: 'ubuntu:24.04',
        commands: ['true'],
        resources: { cpu: 1 },
      }),
    );
    const applied = await dstack(['apply', '-f', 'image.dstack.yml', '-y']);
    expect(applied.code).not.toBe(0);
    expect(applied.stderr).toMatch(
      /image: .*without a container: no cluster of the backend was seen with pyxis/,
    );
  });
});
