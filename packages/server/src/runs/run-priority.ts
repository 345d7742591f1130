/**
 * Run `priority` (dstack's, 0–100, default 0): when capacity is short, the jobs of higher-priority
 * runs are provisioned first; equal priorities keep submission order. dstack orders the jobs its
 * fetcher claims by priority; here the jobs a pass looks at run concurrently, so the order is
 * kept by the job itself: a job does not take capacity that a waiting job of a higher-priority run
 * of its project could take (a fleet instance that job fits, an offer that satisfies it, or any
 * instance or share of the server's own host, which is one pool). It waits instead, whatever its `retry`, and
 * an event says for which run, once.
 */
import type { InstanceOfferWithAvailability, Requirements } from '@dstack/core';
import type { Kysely } from 'kysely';
import type { AppContext } from '../context.js';
import { instanceOfferOf, jobSpecOf } from '../db/json-columns.js';
import type { Database, InstancesTable, JobsTable, RunsTable } from '../db/schema.js';
import { eventTargets, recordEvent, SYSTEM_ACTOR } from '../events/event-recorder.js';
import { smallestFittingShare } from '../fleets/instance-blocks.js';
import { offerSatisfies } from '../fleets/instance-matching.js';

/** A job of a higher-priority run, waiting for capacity. */
export interface JobAhead {
  runName: string;
  priority: number;
  requirements: Requirements;
}

/** How many waiting jobs ahead a pass keeps at most: enough to find one that fits. */
const JOBS_AHEAD_LIMIT = 20;

/** The project's runs of a higher priority than `priority` whose jobs may wait for capacity. */
export function higherPriorityRunsQuery(db: Kysely<Database>, projectId: string, priority: number) {
  return db
    .selectFrom('runs')
    .select(['id', 'run_name', 'priority'])
    .where('project_id', '=', projectId)
    .where('status', 'in', ['submitted', 'provisioning', 'running'])
    .where('priority', '>', priority);
}

/**
 * The jobs of the project's higher-priority runs waiting in `submitted` with no instance yet,
 * highest first. None for the highest priority.
 */
export async function jobsAhead(app: AppContext, job: JobsTable, run: RunsTable): Promise<JobAhead[]> {
  const priority = run.priority ?? 0;
  // The project's active runs of a higher priority (an index; usually none), then their jobs (by
  // run): one join let SQLite start from every submitted job of every project instead. A pending
  // run's jobs are not provisioned (a retry's backoff, a schedule): they wait for nothing.
  const runsAhead = await higherPriorityRunsQuery(app.db, job.project_id, priority).execute();
  if (runsAhead.length === 0) return [];
  const runsById = new Map(runsAhead.map((ahead) => [ahead.id, ahead]));
  // Only the run's jobs are filtered by SQL, so that the run index is the one used.
  const jobs = await app.db
    .selectFrom('jobs')
    .select(['id', 'run_id', 'status', 'instance_id', 'submitted_at', 'job_spec_data'])
    .where('run_id', 'in', [...runsById.keys()])
    .execute();
  return jobs
    .filter((other) => other.status === 'submitted' && other.instance_id === null)
    .map((other) => ({ job: other, run: runsById.get(other.run_id) as (typeof runsAhead)[number] }))
    .sort((a, b) => (b.run.priority ?? 0) - (a.run.priority ?? 0) || a.job.submitted_at - b.job.submitted_at)
    .slice(0, JOBS_AHEAD_LIMIT)
    .map(({ job: other, run: ahead }) => ({
      runName: ahead.run_name,
      priority: ahead.priority ?? 0,
      requirements: jobSpecOf(other).requirements,
    }));
}

/**
 * The first job ahead that the fleet instance (with its free blocks) would take instead, or any,
 * when the instance is on the server's own host (`sharesHost`): ended, it makes room for them.
 */
export function aheadForInstance(
  ahead: readonly JobAhead[],
  instance: InstancesTable,
  sharesHost: boolean,
): JobAhead | undefined {
  if (sharesHost) return ahead[0];
  const offer = instanceOfferOf(instance);
  if (offer === null) return undefined;
  const free = instance.total_blocks - instance.busy_blocks;
  return ahead.find(
    (other) => smallestFittingShare(offer, instance.total_blocks, free, other.requirements) !== null,
  );
}

/**
 * The first job ahead that a launch of `offer` would take capacity from: one the offer satisfies,
 * or any, when the offer is a share of the server's own host (`sharesHost`).
 */
export function aheadForOffer(
  ahead: readonly JobAhead[],
  offer: InstanceOfferWithAvailability,
  sharesHost: boolean,
): JobAhead | undefined {
  return sharesHost ? ahead[0] : ahead.find((other) => offerSatisfies(offer, other.requirements));
}

const WAITS_FOR_PRIORITY = 'Job waits for higher-priority run';

/** Records, once per job, that it waits for `ahead`'s run to be provisioned first. */
export async function recordWaitForPriority(app: AppContext, job: JobsTable, ahead: JobAhead): Promise<void> {
  const recorded = await app.db
    .selectFrom('event_targets')
    .innerJoin('events', 'events.id', 'event_targets.event_id')
    .select('events.id')
    .where('event_targets.entity_id', '=', job.id)
    .where('events.message', 'like', `${WAITS_FOR_PRIORITY}%`)
    .limit(1)
    .executeTakeFirst();
  if (recorded) return;
  await recordEvent(app.db, app.settings.events, {
    message: `${WAITS_FOR_PRIORITY} ${ahead.runName} (priority ${ahead.priority}) to be provisioned first`,
    actor: SYSTEM_ACTOR,
    targets: [eventTargets.job(job)],
  });
}
