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
import type { AppContext } from '../context.js';
import { instanceOfferOf, jobSpecOf } from '../db/json-columns.js';
import type { InstancesTable, JobsTable, RunsTable } from '../db/schema.js';
import { eventTargets, recordEvent, SYSTEM_ACTOR } from '../events/event-recorder.js';
import { smallestFittingShare } from '../fleets/instance-blocks.js';
import { offerSatisfies } from '../fleets/instance-matching.js';

/** A job of a higher-priority run, waiting for capacity. */
export interface JobAhead {
  runName: string;
  priority: number;
  requirements: Requirements;
}

/** How many waiting jobs ahead a pass reads at most: enough to find one that fits. */
const JOBS_AHEAD_LIMIT = 20;

/**
 * The jobs of the project's higher-priority runs waiting in `submitted` with no instance yet,
 * highest first (one query). None for the highest priority.
 */
export async function jobsAhead(app: AppContext, job: JobsTable, run: RunsTable): Promise<JobAhead[]> {
  const priority = run.priority ?? 0;
  const rows = await app.db
    .selectFrom('jobs')
    .innerJoin('runs', 'runs.id', 'jobs.run_id')
    .select(['jobs.id', 'jobs.job_spec_data', 'runs.run_name', 'runs.priority'])
    .where('jobs.project_id', '=', job.project_id)
    .where('jobs.status', '=', 'submitted')
    .where('jobs.instance_id', 'is', null)
    .where('runs.priority', '>', priority)
    // A pending run's jobs are not provisioned (a retry's backoff, a schedule): they wait for nothing.
    .where('runs.status', 'not in', ['pending', 'terminating'])
    .orderBy('runs.priority', 'desc')
    .orderBy('jobs.submitted_at')
    .limit(JOBS_AHEAD_LIMIT)
    .execute();
  return rows.map((row) => ({
    runName: row.run_name,
    priority: row.priority ?? 0,
    requirements: jobSpecOf({ id: row.id, job_spec_data: row.job_spec_data }).requirements,
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
