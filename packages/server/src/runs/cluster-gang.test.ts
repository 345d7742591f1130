/**
 * The gang of a multi-node task: the rules (`clusterWaitReason`, `clusterInfoOf`) on their own,
 * then through the real pipelines with real agents (the instant backend): the master is placed
 * first and the worker goes to its cluster fleet, no node starts while another's agent is not up,
 * and `startup_order` holds the master or the workers.
 */
import type { JobProvisioningData } from '@dstack/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fleetConfigurationOf } from '../db/json-columns.js';
import type { JobsTable } from '../db/schema.js';
import { createPipelineHarness, type PipelineHarness } from '../testing/pipeline-harness.test.helpers.js';
import { type ClusterNode, clusterInfoOf, clusterWaitReason } from './cluster-gang.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

function provisioning(ip: string | null, gpus = 0): JobProvisioningData {
  return {
    backend: 'aws',
    instance_type: {
      name: 'p4d',
      resources: {
        cpus: 8,
        memory_mib: 1024,
        gpus: Array.from({ length: gpus }, () => ({ name: 'A100', memory_mib: 1024 })),
        spot: false,
        disk: { size_mib: 1024 },
      },
    },
    instance_id: `i-${ip}`,
    hostname: ip,
    internal_ip: ip === null ? null : `10.0.0.${ip.split('.').at(-1)}`,
    region: 'us-east-1',
    price: 1,
    username: 'ubuntu',
    dockerized: true,
  } as JobProvisioningData;
}

function node(jobNum: number, fields: Partial<ClusterNode> = {}): ClusterNode {
  return {
    jobNum,
    status: 'provisioning',
    provisioningData: provisioning(`54.0.0.${jobNum + 1}`),
    runtimeData: null,
    agentUp: true,
    ...fields,
  };
}

describe('clusterWaitReason', () => {
  it('lets a single node start at once', () => {
    expect(clusterWaitReason(0, [node(0, { agentUp: false })], 'workers-first')).toBeNull();
  });

  it('holds every node until each has an instance, an address and an answering agent', () => {
    expect(
      clusterWaitReason(0, [node(0), node(1, { provisioningData: null, status: 'submitted' })], 'any'),
    ).toBe('waiting for node(s) 1 to get an instance');
    expect(clusterWaitReason(1, [node(0, { provisioningData: provisioning(null) }), node(1)], 'any')).toBe(
      'waiting for the agents of node(s) 0',
    );
    expect(
      clusterWaitReason(0, [node(0), node(1, { agentUp: false }), node(2, { agentUp: false })], 'any'),
    ).toBe('waiting for the agents of node(s) 1, 2');
    expect(clusterWaitReason(1, [node(0), node(1)], 'any')).toBeNull();
  });

  it('master-first holds the workers until the master was handed to its runner', () => {
    const nodes = [node(0, { status: 'pulling' }), node(1)];
    expect(clusterWaitReason(1, nodes, 'master-first')).toMatch(/master node to run/);
    expect(clusterWaitReason(0, nodes, 'master-first')).toBeNull();
    expect(clusterWaitReason(1, [node(0, { status: 'running' }), node(1)], 'master-first')).toBeNull();
    // A master that already ended does not hold its workers for good.
    expect(clusterWaitReason(1, [node(0, { status: 'done' }), node(1)], 'master-first')).toBeNull();
  });

  it('workers-first holds the master until every worker was handed to its runner', () => {
    const nodes = [node(0), node(1, { status: 'running' }), node(2, { status: 'pulling' })];
    expect(clusterWaitReason(0, nodes, 'workers-first')).toBe(
      'waiting for worker node(s) 2 to run (startup_order: workers-first)',
    );
    expect(clusterWaitReason(2, nodes, 'workers-first')).toBeNull();
    expect(clusterWaitReason(0, [node(0), node(1, { status: 'running' })], 'workers-first')).toBeNull();
  });
});

describe('clusterInfoOf', () => {
  it("lists every node's internal IP and GPUs in rank order, the master's IP first", () => {
    const nodes = [
      node(0, { provisioningData: provisioning('54.0.0.1', 8) }),
      node(1, { provisioningData: provisioning('54.0.0.2', 8) }),
      // A node on a share of its instance: the GPUs of its share.
      node(2, {
        provisioningData: provisioning('54.0.0.3', 8),
        runtimeData: {
          network_mode: 'host',
          offer: { instance: { resources: { gpus: [{}, {}] } } },
        } as unknown as ClusterNode['runtimeData'],
      }),
    ];
    expect(clusterInfoOf(nodes[2] as ClusterNode, nodes)).toEqual({
      job_ips: ['10.0.0.1', '10.0.0.2', '10.0.0.3'],
      master_job_ip: '10.0.0.1',
      gpus_per_job: 2,
      gpus_per_node: [8, 8, 2],
    });
  });

  it('makes a single job a cluster of itself, on its hostname when it has no internal IP', () => {
    const data = { ...provisioning('127.0.0.1'), internal_ip: null };
    expect(clusterInfoOf({ provisioningData: data, runtimeData: null }, [])).toEqual({
      job_ips: ['127.0.0.1'],
      master_job_ip: '127.0.0.1',
      gpus_per_job: 0,
      gpus_per_node: [0],
    });
  });
});

describe('a 2-node task through the pipelines', () => {
  let harness: PipelineHarness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  const byRank = (jobs: JobsTable[]) => [...jobs].sort((a, b) => a.job_num - b.job_num);

  it('places the master first, then the worker in its cluster fleet; no node starts while an agent is down', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const run = await h.applyTask('pair', { commands: ['true'], nodes: 2 });
    await h.step('jobs-submitted');
    let [master, worker] = byRank(await h.jobs(run.id));
    expect(master).toMatchObject({ status: 'provisioning' });
    expect(worker).toMatchObject({ status: 'submitted', instance_id: null });
    await h.step('jobs-submitted');
    [master, worker] = byRank(await h.jobs(run.id));
    expect(worker?.status).toBe('provisioning');
    const masterInstance = await h.instance(master?.instance_id ?? null);
    const workerInstance = await h.instance(worker?.instance_id ?? null);
    expect(workerInstance.id).not.toBe(masterInstance.id);
    expect(workerInstance.fleet_id).toBe(masterInstance.fleet_id);
    const fleet = await h.app.db
      .selectFrom('fleets')
      .selectAll()
      .where('id', '=', masterInstance.fleet_id ?? '')
      .executeTakeFirstOrThrow();
    expect(fleetConfigurationOf(fleet).placement).toBe('cluster');

    // Both agents answer; then the worker's instance is taken as not up again.
    await h.stepUntil(
      async () =>
        (await h.instance(masterInstance.id)).status === 'busy' &&
        (await h.instance(workerInstance.id)).status === 'busy',
      { pipelines: ['instances'] },
    );
    await h.app.db
      .updateTable('instances')
      .set({ status: 'provisioning' })
      .where('id', '=', workerInstance.id)
      .execute();
    for (let round = 0; round < 5; round++) {
      h.advance(1_000);
      await h.step('jobs-running');
    }
    expect(byRank(await h.jobs(run.id)).map((job) => job.status)).toEqual(['provisioning', 'provisioning']);
    await h.app.db
      .updateTable('instances')
      .set({ status: 'busy' })
      .where('id', '=', workerInstance.id)
      .execute();
    await h.stepUntil(async () => (await h.run(run.id)).status === 'done');
  });

  for (const order of ['master-first', 'workers-first'] as const) {
    it(`starts the nodes ${order}`, async () => {
      const h = await createPipelineHarness();
      harness = h;
      const run = await h.applyTask(`order-${order}`, { commands: ['true'], nodes: 2, startup_order: order });
      const started = (job: JobsTable | undefined) =>
        !['submitted', 'provisioning', 'pulling'].includes(job?.status ?? '');
      const violations: string[] = [];
      await h.stepUntil(async () => {
        const [master, worker] = byRank(await h.jobs(run.id));
        const early = order === 'master-first' ? worker : master;
        const late = order === 'master-first' ? master : worker;
        if (['pulling', 'running'].includes(early?.status ?? '') && !started(late)) {
          violations.push(`${early?.job_name} ${early?.status} while ${late?.job_name} ${late?.status}`);
        }
        return (await h.run(run.id)).status === 'done';
      });
      expect(violations).toEqual([]);
    });
  }
});
