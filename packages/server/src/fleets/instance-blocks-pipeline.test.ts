/**
 * Fleet `blocks` through the real pipelines: instances are split into blocks when launched,
 * jobs take the fewest blocks that satisfy them, several jobs share one instance, and blocks
 * go back when the jobs end. The fake backend gives GPU instances (placement only, no agents);
 * the instant backend runs the jobs through a real shim.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JobRuntimeData } from '@dstack/core';
import type { FakeBackend, InstantBackend } from '@dstack/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { InstancesTable, JobsTable, RunsTable } from '../db/schema.js';
import {
  createFakeBackendPipelineHarness,
  createPipelineHarness,
  EVERY_PIPELINE,
  type PipelineHarness,
} from '../testing/pipeline-harness.test.helpers.js';
import { applyFleet } from './fleets.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let setup: PipelineHarness<FakeBackend> | PipelineHarness<InstantBackend> | undefined;
const directories: string[] = [];

afterEach(async () => {
  await setup?.close();
  setup = undefined;
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
});

/** One type with 4 GPUs (16 CPUs, 64 GB), on demand in one region. */
async function startWithGpuHosts(): Promise<PipelineHarness<FakeBackend>> {
  const harness = await createFakeBackendPipelineHarness({
    capabilities: ['create-instance', 'multinode'],
    capacity: {
      spot: 'on-demand',
      regions: ['fake-region-1'],
      instanceTypes: [
        {
          name: 'fake.4xa100',
          cpus: 16,
          memoryGib: 64,
          price: 4,
          gpu: { name: 'A100', memoryGib: 80, count: 4 },
        },
      ],
    },
  });
  setup = harness;
  return harness;
}

async function instancesOf(h: { app: PipelineHarness['app'] }): Promise<InstancesTable[]> {
  return h.app.db
    .selectFrom('instances')
    .selectAll()
    .where('deleted', '=', 0)
    .orderBy('instance_num')
    .execute();
}

/** Provisions the fleet's one instance and marks it up, as the instance pipeline would once its shim answers. */
async function gpuFleetInstance(
  h: PipelineHarness<FakeBackend>,
  blocks: number | 'auto',
  placement: 'any' | 'cluster' = 'any',
): Promise<InstancesTable> {
  await applyFleet(h.app, h.project, { type: 'fleet', name: 'pool', nodes: 1, blocks, placement });
  await h.step('fleets');
  const [instance] = await instancesOf(h);
  if (!instance) throw new Error('the fleet launched no instance');
  await h.app.db
    .updateTable('instances')
    .set({ status: 'idle', idle_since: h.now() })
    .where('id', '=', instance.id)
    .execute();
  return h.instance(instance.id);
}

function runtimeOf(job: JobsTable | undefined): JobRuntimeData {
  if (!job?.job_runtime_data) throw new Error('the job has no runtime data');
  return JSON.parse(job.job_runtime_data) as JobRuntimeData;
}

async function onlyJob(h: PipelineHarness<FakeBackend>, runId: string): Promise<JobsTable> {
  const [job] = await h.jobs(runId);
  if (!job) throw new Error('the run has no job');
  return job;
}

describe('fleet blocks on GPU instances', () => {
  it('splits a 4-GPU instance of a blocks: auto fleet into one block per GPU', async () => {
    const h = await startWithGpuHosts();
    const instance = await gpuFleetInstance(h, 'auto');
    expect(instance).toMatchObject({ total_blocks: 4, busy_blocks: 0 });
    expect(JSON.parse(instance.offer ?? '{}')).toMatchObject({ total_blocks: 4 });
  });

  it('gives a 2-GPU job 2 of 4 blocks, and a 1-GPU job one more, on the same instance', async () => {
    const h = await startWithGpuHosts();
    const instance = await gpuFleetInstance(h, 4);
    const twoGpus = await h.applyTask('two-gpus', {
      commands: ['true'],
      resources: { gpu: 2, cpu: '1..', memory: '1GB..' },
    });
    const oneGpu = await h.applyTask('one-gpu', {
      commands: ['true'],
      resources: { gpu: 1, cpu: '1..', memory: '1GB..' },
    });
    await h.step('jobs-submitted');

    const first = await onlyJob(h, twoGpus.id);
    const second = await onlyJob(h, oneGpu.id);
    expect([first.status, first.instance_id]).toEqual(['provisioning', instance.id]);
    expect([second.status, second.instance_id]).toEqual(['provisioning', instance.id]);
    expect(await h.instance(instance.id)).toMatchObject({ status: 'busy', busy_blocks: 3, total_blocks: 4 });
    // Each job is limited to its share: GPUs, CPUs and memory × blocks/4; the disk is not split.
    expect(runtimeOf(first)).toMatchObject({ gpu: 2, cpu: 8, memory: 32 });
    expect(runtimeOf(first).offer).toMatchObject({ blocks: 2, total_blocks: 4 });
    expect(runtimeOf(first).offer?.instance.resources.disk.size_mib).toBe(100 * 1024);
    expect(runtimeOf(second)).toMatchObject({ gpu: 1, cpu: 4, memory: 16 });
    expect(h.backend.callsOf('runJob')).toHaveLength(0);
  });

  it('does not place a job that needs more blocks than are free', async () => {
    const h = await startWithGpuHosts();
    const instance = await gpuFleetInstance(h, 4);
    const three = await h.applyTask('three-gpus', {
      commands: ['true'],
      resources: { gpu: 3, cpu: '1..', memory: '1GB..' },
    });
    await h.step('jobs-submitted');
    const two = await h.applyTask('two-more', {
      commands: ['true'],
      resources: { gpu: 2, cpu: '1..', memory: '1GB..' },
    });
    await h.step('jobs-submitted');

    expect((await onlyJob(h, three.id)).instance_id).toBe(instance.id);
    // The fleet holds one node and it has 1 free block: the job finds no capacity.
    expect(await onlyJob(h, two.id)).toMatchObject({
      status: 'terminating',
      termination_reason: 'failed_to_start_due_to_no_capacity',
    });
    expect(await h.instance(instance.id)).toMatchObject({ busy_blocks: 3 });
  });

  it('gives a job of a multinode run the whole instance', async () => {
    const h = await startWithGpuHosts();
    // A multi-node run lands only on a cluster fleet.
    const instance = await gpuFleetInstance(h, 4, 'cluster');
    const cluster = await h.applyTask('cluster', {
      commands: ['true'],
      nodes: 2,
      resources: { gpu: '1..', cpu: '1..', memory: '1GB..' },
    });
    await h.step('jobs-submitted');
    const placed = (await h.jobs(cluster.id)).filter((job) => job.instance_id === instance.id);
    expect(placed).toHaveLength(1);
    expect(runtimeOf(placed[0])).toMatchObject({ gpu: null, cpu: null, memory: null });
    expect(runtimeOf(placed[0]).offer).toMatchObject({ blocks: 4, total_blocks: 4 });
    expect(await h.instance(instance.id)).toMatchObject({ busy_blocks: 4 });
  });

  it('launches a job on a new instance of a blocks fleet, taking only the blocks it needs', async () => {
    const h = await startWithGpuHosts();
    await applyFleet(h.app, h.project, { type: 'fleet', name: 'pool', nodes: '0..1', blocks: 'auto' });
    const run = await h.applyTask('one-gpu', {
      commands: ['true'],
      fleets: ['pool'],
      resources: { gpu: 1, cpu: '1..', memory: '1GB..' },
    });
    await h.step('jobs-submitted');
    const job = await onlyJob(h, run.id);
    expect(job.status).toBe('provisioning');
    expect(await h.instance(job.instance_id)).toMatchObject({ total_blocks: 4, busy_blocks: 1 });
    expect(runtimeOf(job)).toMatchObject({ gpu: 1, cpu: 4, memory: 16 });
  });
});

describe('blocks of a job stopped while its launch is stranded', () => {
  it('frees every block the stored launch took for the job', async () => {
    const h = await startWithGpuHosts();
    await applyFleet(h.app, h.project, { type: 'fleet', name: 'pool', nodes: '0..1', blocks: 'auto' });
    const run = await h.applyTask('two-gpus', {
      commands: ['true'],
      fleets: ['pool'],
      resources: { gpu: 2, cpu: '1..', memory: '1GB..' },
    });
    await h.step('jobs-submitted');
    const job = await onlyJob(h, run.id);
    expect(await h.instance(job.instance_id)).toMatchObject({ total_blocks: 4, busy_blocks: 2 });
    // The state a server leaves when it dies after the launch was stored on the instance and
    // before it was stored on the job; then the run is stopped.
    await h.app.db
      .updateTable('jobs')
      .set({
        status: 'terminating',
        termination_reason: 'terminated_by_user',
        instance_assigned: 0,
        job_provisioning_data: null,
        job_runtime_data: null,
        last_processed_at: 0,
      })
      .where('id', '=', job.id)
      .execute();
    await h.step('jobs-terminating');
    expect((await onlyJob(h, run.id)).status).toBe('terminated');
    expect(await h.instance(job.instance_id)).toMatchObject({ status: 'provisioning', busy_blocks: 0 });
  });
});

describe('fleet blocks with real agents', () => {
  it('runs 4 one-block jobs at once on a 4-block instance; a 5th waits for a block', async () => {
    const h = await createPipelineHarness({ cpus: 4, memoryGb: 16 });
    setup = h;
    const gate = await mkdtemp(join(tmpdir(), 'dstack-blocks-gate-'));
    directories.push(gate);
    const go = join(gate, 'go');
    await applyFleet(h.app, h.project, { type: 'fleet', name: 'pool', nodes: 1, blocks: 4 });
    await h.stepUntil(async () => (await instancesOf(h))[0]?.status === 'idle', {
      pipelines: EVERY_PIPELINE,
    });
    const [instance] = await instancesOf(h);
    expect(instance).toMatchObject({ total_blocks: 4, busy_blocks: 0 });

    const waiting = {
      commands: [`while [ ! -f ${go} ]; do sleep 0.05; done`],
      fleets: ['pool'],
      resources: { cpu: 1, memory: '1GB..' },
      retry: { on_events: ['no-capacity'], duration: '1h' },
    };
    const runs: RunsTable[] = [];
    for (const name of ['job-a', 'job-b', 'job-c', 'job-d']) runs.push(await h.applyTask(name, waiting));
    await h.stepUntil(async () => {
      const statuses = await Promise.all(runs.map(async (run) => (await h.run(run.id)).status));
      return statuses.every((status) => status === 'running');
    });
    expect(await h.instance(instance?.id ?? null)).toMatchObject({ status: 'busy', busy_blocks: 4 });
    const jobs = (await Promise.all(runs.map((run) => h.jobs(run.id)))).flat();
    expect(new Set(jobs.map((job) => job.instance_id))).toEqual(new Set([instance?.id]));

    const fifth = await h.applyTask('job-e', waiting);
    await h.stepUntil(async () => (await h.run(fifth.id)).status === 'pending');
    expect((await h.jobs(fifth.id))[0]).toMatchObject({
      termination_reason: 'failed_to_start_due_to_no_capacity',
    });

    writeFileSync(go, '');
    await h.stepUntil(
      async () => {
        const statuses = await Promise.all([...runs, fifth].map(async (run) => (await h.run(run.id)).status));
        return statuses.every((status) => status === 'done');
      },
      { rounds: 1_000 },
    );
    expect(existsSync(go)).toBe(true);
    const resubmitted = await h.jobs(fifth.id);
    expect(resubmitted.at(-1)?.instance_id).toBe(instance?.id);
    expect(await h.instance(instance?.id ?? null)).toMatchObject({ status: 'idle', busy_blocks: 0 });
  });
});
