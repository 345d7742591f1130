/**
 * A submitted job whose capacity is busy (the local host, held by its own instances) or taken by a
 * higher-priority run first: it waits, makes room on the host, or fails; and the job first in line
 * is made due when capacity frees.
 */
import { DEFAULT_RETRY_DURATION } from '@dstack/core';
import type { BackendOffer } from '../backends/offers.js';
import type { AppContext } from '../context.js';
import { instanceOfferOf, jobSpecOf } from '../db/json-columns.js';
import type { InstancesTable, JobsTable } from '../db/schema.js';
import { recordStatusChange } from '../events/status-events.js';
import { fleetKeepsInstance } from '../fleets/fleet-rows.js';
import { makesRoomRatherThanReused } from '../fleets/host-instance-reuse.js';
import { smallestFittingShare } from '../fleets/instance-blocks.js';
import { unclaimedAt } from '../pipelines/pipeline.js';
import type { JobPassContext } from './job-pass.js';
import { failJob, waitForCapacity } from './job-submitted-release.js';
import { type JobAhead, recordWaitForPriority } from './run-priority.js';

/** How soon a job waiting for capacity that frees by itself (the local host) looks again. */
const BUSY_CAPACITY_RETRY_MS = 1_000;

/** Leaves the job waiting while a job of a higher-priority run takes the capacity it fits (run-priority.ts). */
export async function waitBehind(context: JobPassContext, ahead: JobAhead): Promise<void> {
  await recordWaitForPriority(context.app, context.job, ahead);
  await waitForCapacity(context, BUSY_CAPACITY_RETRY_MS);
}

/**
 * The job's matching offers are all `busy` (the local host, held by its own instances): idle
 * instances it does not fit are made to go, and it waits for the room when that is on its way
 * or its `retry` covers `no-capacity`; else it fails `failed_to_start_due_to_no_capacity`, as
 * dstack's job with no capacity and no retry does.
 */
export async function waitOrFailForBusyCapacity(
  context: JobPassContext,
  busy: readonly BackendOffer[],
): Promise<void> {
  const { app, job } = context;
  const backends = [...new Set(busy.map((entry) => entry.backend.type))];
  const roomComing = await makeRoomOnHost(app, job, backends);
  if (roomComing || waitsForCapacity(job)) {
    await waitForCapacity(context, BUSY_CAPACITY_RETRY_MS);
    return;
  }
  await failJob(
    context,
    'failed_to_start_due_to_no_capacity',
    `no capacity now: the offers that match are busy, held by running instances (${busy.map(describeBusyOffer).join('; ')}); a run whose retry covers no-capacity waits for them`,
  );
}

function describeBusyOffer({ backend, offer }: BackendOffer): string {
  const resources = offer.instance.resources;
  const gpus = resources.gpus.length > 0 ? `, ${resources.gpus.length} GPUs` : '';
  return `${backend.type}/${offer.region}/${offer.instance.name}: ${resources.cpus} CPUs, ${Number((resources.memory_mib / 1024).toFixed(1))}GB${gpus}`;
}

/**
 * Whether the job waits in `submitted` for capacity that a backend said frees by itself (the
 * local host, as its instances' jobs end), rather than failing and being resubmitted after
 * dstack's backoff: its `retry` covers `no-capacity`, for `retry.duration` from its submission.
 * Without such a `retry` it fails, as dstack's jobs do.
 */
export function waitsForCapacity(job: JobsTable): boolean {
  const retry = jobSpecOf(job).retry;
  if (!retry?.on_events.includes('no-capacity')) return false;
  return Date.now() - job.submitted_at <= (retry.duration ?? DEFAULT_RETRY_DURATION) * 1000;
}

/**
 * Makes room on `backends` (whose capacity their own instances hold: the local host) for a job
 * that fits none of its project's idle instances (or only ones larger than it asks for, which
 * would keep the rest of the host from other jobs: host-instance-reuse.ts): terminates the
 * longest idle instance on them, of any project (the host is one for all of them), that its
 * fleet does not keep (`nodes.min`).
 * Returns whether room is on its way: an instance was made to go, or one is terminating
 * already. An idle instance is only kept for reuse: a job waiting for the host comes first.
 */
export async function makeRoomOnHost(
  app: AppContext,
  job: JobsTable,
  backends: readonly string[],
): Promise<boolean> {
  const instances = await app.db
    .selectFrom('instances')
    .selectAll()
    .where('backend', 'in', [...backends])
    .where('status', 'in', ['idle', 'terminating'])
    .where('deleted', '=', 0)
    .orderBy('idle_since')
    .execute();
  if (instances.some((instance) => instance.status === 'terminating')) return true;
  const idle = instances.filter((instance) => instance.busy_blocks === 0);
  // One of its project became idle since the job looked: the job takes it on its next pass.
  const { requirements } = jobSpecOf(job);
  const fitsJob = async (instance: InstancesTable) => {
    const offer = instance.unreachable === 0 ? instanceOfferOf(instance) : null;
    return (
      instance.project_id === job.project_id &&
      offer !== null &&
      smallestFittingShare(
        offer,
        instance.total_blocks,
        instance.total_blocks - instance.busy_blocks,
        requirements,
      ) !== null &&
      !(await makesRoomRatherThanReused(app, instance, requirements))
    );
  };
  for (const instance of idle) if (await fitsJob(instance)) return true;
  for (const instance of idle) {
    if (await fleetKeepsInstance(app, instance)) continue;
    const now = Date.now();
    const update = {
      status: 'terminating',
      termination_reason: 'idle_timeout',
      termination_reason_message: 'idle; terminated early to make room on the host for a job',
    } as const;
    const evicted = await app.db.transaction().execute(async (transaction) => {
      const result = await transaction
        .updateTable('instances')
        .set({ ...update, last_processed_at: 0 })
        .where('id', '=', instance.id)
        .where('status', '=', 'idle')
        .where('busy_blocks', '=', 0)
        .where(unclaimedAt(now))
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) return false;
      await recordStatusChange(transaction, app.settings.events, 'instances', instance, update);
      return true;
    });
    if (evicted) {
      app.wakeUps.wake('instances');
      return true;
    }
  }
  return false;
}

/**
 * Makes the longest-waiting `submitted` job of the highest-priority run with no launch under
 * way due now: a job just gave its share back (its instance is idle, or its blocks free), and
 * that job is first in line for it, rather than finding it at its next look (`waitForCapacity`). One job, not every waiting
 * one: what one job frees fits about one more.
 */
export async function markLongestWaitingJobDue(app: AppContext): Promise<void> {
  const next = await app.db
    .selectFrom('jobs')
    .innerJoin('runs', 'runs.id', 'jobs.run_id')
    .select('jobs.id')
    .where('jobs.status', '=', 'submitted')
    .where('jobs.instance_id', 'is', null)
    .where('jobs.last_processed_at', '>', 0)
    .orderBy('runs.priority', 'desc')
    .orderBy('jobs.submitted_at')
    .limit(1)
    .executeTakeFirst();
  if (!next) return;
  await app.db
    .updateTable('jobs')
    .set({ last_processed_at: 0 })
    .where('id', '=', next.id)
    .where('status', '=', 'submitted')
    .execute();
}
