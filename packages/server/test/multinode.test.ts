/**
 * Multi-node tasks end to end on the local backend: a real server (SQLite), the nodes' jobs run
 * by real detached shims and runners on this host. Every local instance is on this host, so the
 * nodes' internal IP is loopback (127.0.0.1): a worker reaches the master there. Once, on SQLite:
 * real processes start and stop here, and the retry waits out dstack's first backoff (15 s).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ApiError, Fleet, Run } from '@dstack/core';
import { findFreePort } from '@dstack/shim';
import { startVastaiEmulator, type VastaiEmulator, vastaiEmulatorBackend } from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

import {
  applyTask,
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
  task,
  waitFor,
} from './server-harness.js';

type Submission = Run['jobs'][number]['job_submissions'][number];

function latestSubmissions(run: Run): Submission[] {
  return run.jobs.map((job) => job.job_submissions[job.job_submissions.length - 1] as Submission);
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('multi-node tasks on the local backend', () => {
  const temp = makeTempDir();
  let harness: HarnessServer;
  const node = JSON.stringify(process.execPath);

  beforeAll(async () => {
    harness = await startHarnessServer({ dir: temp.dir, config: localBackendConfig(temp.dir) });
  });

  afterAll(async () => {
    await harness.terminateFleetsAndClose();
    temp.remove();
  });

  it("gives each node its rank and the cluster's addresses, and a worker reaches the master", async () => {
    const port = await findFreePort();
    // The master accepts one connection and prints what the worker sent; the worker connects to
    // the master's IP (retrying until the master listens) and sends its rank.
    const master = `const s=require('net').createServer(c=>{c.on('data',d=>{console.log('master got: '+d);s.close();c.end()})});s.listen(${port},process.env.DSTACK_MASTER_NODE_IP)`;
    const worker = `const go=()=>{const c=require('net').connect(${port},process.env.DSTACK_MASTER_NODE_IP,()=>c.end('hello from rank '+process.env.DSTACK_NODE_RANK));c.on('error',()=>setTimeout(go,100))};go()`;
    await applyTask(
      harness,
      task(
        'cluster',
        [
          'echo "node rank=$DSTACK_NODE_RANK nodes=$DSTACK_NODES_NUM master=$DSTACK_MASTER_NODE_IP ips=$(echo $DSTACK_NODES_IPS) gpus=$DSTACK_GPUS_NUM per_node=$DSTACK_GPUS_PER_NODE"',
          `if [ "$DSTACK_NODE_RANK" = 0 ]; then ${node} -e "${master}"; else ${node} -e "${worker}"; fi`,
        ],
        { nodes: 2 },
      ),
    );
    const run = await harness.waitForRun('cluster', ['done', 'failed', 'terminated'], 60_000);
    const logs = await harness.logs('cluster');
    // Why a node failed, when one did (once, under a loaded run: not known yet).
    const why = latestSubmissions(run)
      .map((submission) => `${submission.termination_reason}: ${submission.termination_reason_message}`)
      .join('; ');
    expect(run.status, `${why}\n${logs}`).toBe('done');
    expect(logs).toContain('node rank=0 nodes=2 master=127.0.0.1 ips=127.0.0.1 127.0.0.1 gpus=0 per_node=0');
    expect(logs).toContain('node rank=1 nodes=2 master=127.0.0.1 ips=127.0.0.1 127.0.0.1 gpus=0 per_node=0');
    expect(logs).toContain('master got: hello from rank 1');
    // Two instances, one per node, of a cluster fleet the run made (the default `local` fleet is not one).
    const instances = latestSubmissions(run).map((submission) => submission.instance_name);
    expect(new Set(instances).size).toBe(2);
    const fleets = (await harness.call<Fleet[]>('/api/project/main/fleets/list')).body;
    const clusterFleet = fleets.find((fleet) => fleet.spec.configuration.placement === 'cluster');
    expect(clusterFleet?.instances.map((instance) => instance.name).sort()).toEqual(
      expect.arrayContaining([...instances].sort()),
    );
  });

  /** Starts `name` on 2 nodes that record their shell's pid and sleep; resolves with the pid files. */
  async function startSleepingCluster(name: string, extra: Record<string, unknown> = {}) {
    const pidFile = (rank: number, submission: number) => join(temp.dir, `${name}-${rank}-${submission}.pid`);
    await applyTask(
      harness,
      task(
        name,
        [
          `echo $$ > ${temp.dir}/${name}-$DSTACK_NODE_RANK-$(ls ${temp.dir} | grep -c "^${name}-$DSTACK_NODE_RANK-").pid`,
          'exec sleep 300',
        ],
        { nodes: 2, ...extra },
      ),
    );
    return pidFile;
  }

  const readPid = (path: string) =>
    waitFor(`${path}`, () => (existsSync(path) ? Number(readFileSync(path, 'utf8')) || null : null));

  it('ends the other nodes when one is killed', async () => {
    const pidFile = await startSleepingCluster('killed');
    const masterPid = await readPid(pidFile(0, 0));
    const workerPid = await readPid(pidFile(1, 0));
    process.kill(workerPid, 'SIGKILL');
    const run = await harness.waitForRun('killed', ['done', 'failed', 'terminated']);
    expect(run).toMatchObject({ status: 'failed', termination_reason: 'job_failed' });
    const [master, worker] = latestSubmissions(run);
    expect(worker).toMatchObject({ status: 'failed', termination_reason: 'container_exited_with_error' });
    expect(master).toMatchObject({ status: 'terminated', termination_reason: 'terminated_by_server' });
    await waitFor('the master node to stop', () => (processAlive(masterPid) ? null : true));
  });

  it('resubmits every node with retry when one is killed', async () => {
    const pidFile = await startSleepingCluster('retried', {
      retry: { on_events: ['error'], duration: '1h' },
    });
    await readPid(pidFile(0, 0));
    const workerPid = await readPid(pidFile(1, 0));
    process.kill(workerPid, 'SIGKILL');
    // The master is stopped for the retry; after dstack's first backoff (15 s) both nodes run again.
    const masterAgain = await readPid(pidFile(0, 1));
    const workerAgain = await readPid(pidFile(1, 1)).catch(() => null);
    expect(workerAgain).not.toBeNull();
    const run = await harness.waitForRun('retried', ['running']);
    expect(run.jobs.map((job) => job.job_submissions.length)).toEqual([2, 2]);
    expect(run.jobs[0]?.job_submissions[0]).toMatchObject({ termination_reason: 'terminated_by_server' });
    await harness.call('/api/project/main/runs/stop', { runs_names: ['retried'], abort: false });
    await harness.waitForRun('retried', ['terminated', 'failed', 'done']);
    await waitFor('the resubmitted master to stop', () => (processAlive(masterAgain) ? null : true));
  });
});

describe('multi-node tasks in a project with only Vast.ai', () => {
  const temp = makeTempDir();
  let emulator: VastaiEmulator;
  let harness: HarnessServer;

  beforeAll(async () => {
    // No containers: nothing is rented, the refusal comes before any offer.
    emulator = await startVastaiEmulator();
    harness = await startHarnessServer({
      dir: temp.dir,
      config: { projects: [{ name: 'main', backends: [vastaiEmulatorBackend(emulator)] }] },
    });
  });

  afterAll(async () => {
    await harness?.close();
    await emulator?.close();
    temp.remove();
  });

  it('refuses nodes at plan and apply, saying the rentals share no network', async () => {
    const configuration = {
      type: 'task',
      name: 'cluster',
      commands: ['true'],
      nodes: 2,
      resources: { gpu: 1 },
    };
    for (const [path, body] of [
      ['/api/project/main/runs/get_plan', { run_spec: { configuration } }],
      ['/api/project/main/runs/apply', { plan: { run_spec: { configuration } } }],
    ] as const) {
      const answer = await harness.call<ApiError>(path, body);
      expect(answer.status).toBe(400);
      expect(answer.body.detail[0]).toMatchObject({
        code: 'unsupported_fields',
        fields: [['run_spec', 'configuration', 'nodes']],
        msg: expect.stringContaining(
          'nodes: a task on 2 nodes needs instances that reach each other on a shared network, which no eligible backend gives (vastai',
        ),
      });
    }
    expect((await harness.call<Run[]>('/api/runs/list', { project_name: 'main' })).body).toEqual([]);
    // One node is a task like any other.
    const single = await harness.call('/api/project/main/runs/get_plan', {
      run_spec: { configuration: { ...configuration, nodes: 1 } },
    });
    expect(single.status).toBe(200);
  });
});
