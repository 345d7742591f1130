/**
 * A service's replicas, kept by the run pipeline on each pass over the run (dstack's
 * `scale_run_replicas` and RPS autoscaler), group by group (a service without replica groups is
 * one group, `0`):
 * - how many it should have: `replicas: N`, or within `replicas: min..max` the requests per
 *   second the proxy counted over `scaling.window` divided by `scaling.target`, changed no sooner
 *   than `scale_up_delay` / `scale_down_delay` after the last change (from zero at once);
 * - probes (replica-probes.ts): which replicas are ready, and which failed and are replaced;
 * - rolling updates: after a changed service is applied again (`deployment_num` bumped), one
 *   replica of the new deployment is started, and once it is ready one of the old ones is
 *   stopped, until none is left;
 * - replicas started (new ones, or a retired replica number submitted again) and stopped with
 *   `scaled_down`: the proxy stops sending them requests at once, and the job's graceful stop
 *   lets the requests in flight finish.
 * Which replicas start and stop is decided here; their jobs are the run lifecycle's, so the run
 * pipeline passes in how to stop and submit them (`ReplicaJobs`) and this folder imports no `runs/`.
 */
import { isJobFinished, type JobTerminationReason, type ServiceConfiguration } from '@dstack/core';
import { projectOf } from '../accounts/projects.js';
import type { AppContext } from '../context.js';
import {
  desiredReplicaCountsColumn,
  desiredReplicaCountsOf,
  jobSpecOf,
  runSpecOf,
} from '../db/json-columns.js';
import type { JobsTable, RunsTable } from '../db/schema.js';
import { forgetProbes, probeReplicas } from './replica-probes.js';
import {
  DEFAULT_REPLICA_GROUP,
  replicaGroupsOf,
  type ServiceReplicaGroup,
  serviceConfigurationOf,
  serviceHasProbes,
} from './service-spec.js';

/** dstack's default `scaling.window`: requests per second are averaged over a minute. */
const DEFAULT_WINDOW_SECONDS = 60;
/** How often a service that scales or probes is looked at again. */
const SCALING_PASS_MS = 1_000;
/** How often during a rolling update or while replicas start. */
const CHANGING_PASS_MS = 300;
/** How long after a replica found no capacity before another one is started. */
const NO_CAPACITY_BACKOFF_MS = 15_000;

/** One replica to submit: its group, its number, and which submission of that number it is. */
export interface ReplicaSubmission {
  group: string;
  replicaNum: number;
  submissionNum: number;
}

/** What keeping a service's replicas asks of the run pipeline, which owns the jobs. */
export interface ReplicaJobs {
  /**
   * Stops the jobs for `reason` (the job-terminating pipeline takes them from there); false when
   * one of them could not be stopped now (a job pipeline holds it).
   */
  stop(jobs: readonly JobsTable[], reason: JobTerminationReason): Promise<boolean>;
  /** Submits each replica's jobs in the run's current deployment, and wakes the job-submitted pipeline. */
  submit(run: RunsTable, replicas: readonly ReplicaSubmission[]): Promise<void>;
}

/**
 * The replica count the autoscaler wants, as dstack's `RPSAutoscaler.get_desired_count`:
 * ceil(rps / target) within the range, held by the delays since the last change, except that
 * a service at zero scales up at once; while a request waits for a replica, at least one.
 */
export function autoscaledCount(options: {
  range: { min: number; max: number };
  scaling: NonNullable<ServiceConfiguration['scaling']>;
  rps: number;
  /** Requests waiting for a replica now. */
  waiting?: number;
  current: number;
  lastScaledAt: number | null;
  now: number;
}): number {
  const { range, scaling, rps, current, lastScaledAt, now } = options;
  const byRate = Math.max(Math.ceil(rps / scaling.target), (options.waiting ?? 0) > 0 ? 1 : 0);
  const wanted = Math.max(range.min, Math.min(range.max, byRate));
  const since = lastScaledAt === null ? Number.POSITIVE_INFINITY : (now - lastScaledAt) / 1000;
  if (wanted > current) {
    if (current === 0 || since >= scaling.scale_up_delay) return wanted;
    return current;
  }
  if (wanted < current) return since >= scaling.scale_down_delay ? wanted : current;
  return current;
}

/**
 * How many replicas each replica group should have now (dstack's `compute_desired_replica_counts`):
 * a fixed count, or within a group's range what the service's requests per second ask of its
 * `scaling`. The groups share the service's traffic figures and its last scaling time, as in dstack.
 */
export function desiredReplicaCounts(
  app: AppContext,
  run: RunsTable,
  groups: readonly ServiceReplicaGroup[],
): Record<string, number> {
  const previous = previousReplicaCounts(run, groups);
  const counts: Record<string, number> = {};
  for (const group of groups) {
    const { range, scaling } = group;
    const current = previous[group.name] ?? range.min;
    counts[group.name] =
      range.min === range.max || !scaling
        ? range.min
        : autoscaledCount({
            range,
            scaling,
            rps: app.caches.services.stats.rps(run.id, scaling.window ?? DEFAULT_WINDOW_SECONDS),
            waiting: app.caches.services.stats.waiting(run.id),
            current: Math.max(range.min, Math.min(range.max, current)),
            lastScaledAt: run.last_scaled_at ?? null,
            now: Date.now(),
          });
  }
  return counts;
}

/** The counts the last pass wrote; a run from before replica groups kept one total for its one group. */
function previousReplicaCounts(
  run: RunsTable,
  groups: readonly ServiceReplicaGroup[],
): Readonly<Record<string, number>> {
  const stored = desiredReplicaCountsOf(run);
  if (stored) return stored;
  const [only] = groups;
  return groups.length === 1 && only && run.desired_replica_count !== undefined
    ? { [only.name]: run.desired_replica_count }
    : {};
}

/** What the run pass writes for its service, and when it should look again. */
export interface ServiceReplicasOutcome {
  fields: Pick<RunsTable, 'desired_replica_count' | 'desired_replica_counts' | 'last_scaled_at'>;
  /** ms until the next pass should look, or null for the pipeline's own interval. */
  nextPassInMs: number | null;
}

/** The latest submission of each replica's master job. */
function latestReplicas(jobs: readonly JobsTable[]): JobsTable[] {
  const latest = new Map<number, JobsTable>();
  for (const job of jobs) {
    if (job.job_num !== 0) continue;
    const current = latest.get(job.replica_num);
    if (!current || job.submission_num > current.submission_num) latest.set(job.replica_num, job);
  }
  return [...latest.values()];
}

/** The replica group a job belongs to; jobs from before replica groups are in dstack's default one. */
function replicaGroupOf(job: JobsTable): string {
  return jobSpecOf(job).replica_group ?? DEFAULT_REPLICA_GROUP;
}

/** Which replicas to stop first: not ready ones, then the newest replica numbers. */
function stopOrder(ready: (job: JobsTable) => boolean): (a: JobsTable, b: JobsTable) => number {
  return (a, b) => Number(ready(a)) - Number(ready(b)) || b.replica_num - a.replica_num;
}

/** What one replica group needs this pass. */
interface GroupChange {
  stop: JobsTable[];
  start: number;
  /** Replicas start or stop, or a rolling update goes on: look again soon. */
  changing: boolean;
}

/**
 * One group's replicas against its desired count: during a rolling update one new replica at a
 * time, an old one stopped once a new one is ready to take its place (all of them at zero);
 * otherwise as many started or stopped as the count asks.
 */
function changeGroup(
  live: readonly JobsTable[],
  desired: number,
  deployment: number,
  ready: (job: JobsTable) => boolean,
): GroupChange {
  const old = live.filter((job) => (job.deployment_num ?? 0) < deployment).sort(stopOrder(ready));
  const fresh = live.filter((job) => (job.deployment_num ?? 0) >= deployment).sort(stopOrder(ready));
  const readyFresh = fresh.filter(ready);
  const stop: JobsTable[] = [];
  let start = 0;
  if (old.length > 0) {
    const excess = desired === 0 ? old.length : old.length + readyFresh.length - desired;
    stop.push(...old.slice(0, Math.max(0, Math.min(old.length, excess))));
    if (readyFresh.length === fresh.length && fresh.length < desired) start = 1;
  } else if (fresh.length < desired) {
    start = desired - fresh.length;
  } else if (fresh.length > desired) {
    stop.push(...fresh.slice(0, fresh.length - desired));
  }
  return { stop, start, changing: stop.length > 0 || old.length > 0 || fresh.length !== readyFresh.length };
}

/** Keeps the replicas of a service run; null for a run that is not a service. */
export async function keepServiceReplicas(
  app: AppContext,
  run: RunsTable,
  jobs: readonly JobsTable[],
  replicaJobs: ReplicaJobs,
): Promise<ServiceReplicasOutcome | null> {
  const runSpec = runSpecOf(run);
  const service = serviceConfigurationOf(runSpec);
  if (!service) return null;
  const now = Date.now();
  const deployment = run.deployment_num ?? 0;
  const groups = replicaGroupsOf(service);
  const previous = previousReplicaCounts(run, groups);
  const desired = desiredReplicaCounts(app, run, groups);
  const scaled = groups.some((group) => desired[group.name] !== (previous[group.name] ?? group.range.min));
  const fields = {
    desired_replica_count: Object.values(desired).reduce((sum, count) => sum + count, 0),
    desired_replica_counts: desiredReplicaCountsColumn.encode(desired),
    last_scaled_at: scaled ? now : (run.last_scaled_at ?? null),
  };

  const latest = latestReplicas(jobs);
  forgetProbes(
    app,
    jobs.filter((job) => isJobFinished(job.status)).map((job) => job.id),
  );
  const active = latest.filter((job) => !isJobFinished(job.status) && job.status !== 'terminating');
  const probed = serviceHasProbes(service);
  const probes = probed
    ? await probeReplicas(app, await projectOf(app, run.project_id), service, active)
    : { failed: [], nextInMs: null };
  const readyNow = new Set(
    active
      .filter((job) => job.status === 'running')
      .filter((job) => !probed || isReadyNow(app, job, service))
      .map((job) => job.id),
  );
  const ready = (job: JobsTable) => readyNow.has(job.id);

  const stop: JobsTable[] = active.filter((job) => probes.failed.includes(job.id));
  const live = active.filter((job) => !probes.failed.includes(job.id));
  const starts: Array<{ group: string; count: number }> = [];
  let changing = false;
  for (const group of groups) {
    const change = changeGroup(
      live.filter((job) => replicaGroupOf(job) === group.name),
      desired[group.name] ?? 0,
      deployment,
      ready,
    );
    stop.push(...change.stop);
    if (change.start > 0) starts.push({ group: group.name, count: change.start });
    changing ||= change.changing;
  }
  // Replicas of a group the service no longer has go at once, making room for the groups it has.
  const names = new Set(groups.map((group) => group.name));
  const orphans = live.filter((job) => !names.has(replicaGroupOf(job)));
  stop.push(...orphans);

  // A stopped replica's probe state goes once it has finished (above); until its stop has taken,
  // a failed one is reported again each pass.
  const stopped = stop.length === 0 || (await replicaJobs.stop(stop, 'scaled_down'));
  // A replica that just found no capacity: the next one waits a while rather than fail in a loop.
  const unplacedAt = Math.max(
    0,
    ...latest
      .filter((job) => job.termination_reason === 'failed_to_start_due_to_no_capacity')
      .map((job) => job.finished_at ?? job.last_processed_at),
  );
  const backingOff = starts.length > 0 && now - unplacedAt < NO_CAPACITY_BACKOFF_MS;
  // The starts were counted as if every stop took: when one did not, both wait for the next pass,
  // or a replacement would run beside the failed replica it replaces and be the one scaled down.
  const starting = starts.length > 0 && !backingOff && stopped;
  if (starting) await replicaJobs.submit(run, replicaSubmissions(latest, starts));
  changing ||= starting || stop.length > 0;
  const scales = groups.some((group) => group.range.min !== group.range.max);
  const nextPassInMs = changing
    ? CHANGING_PASS_MS
    : Math.min(
        scales ? SCALING_PASS_MS : Number.POSITIVE_INFINITY,
        probes.nextInMs ?? Number.POSITIVE_INFINITY,
      );
  return { fields, nextPassInMs: Number.isFinite(nextPassInMs) ? nextPassInMs : null };
}

/** Whether the replica's probes pass, as this pass left them. */
function isReadyNow(app: AppContext, job: JobsTable, service: ServiceConfiguration): boolean {
  const state = app.caches.services.probeStates.get(job.id);
  // Not probed by this process yet (it restarted): what the last prober wrote.
  if (!state) return job.probes_ready === 1;
  const probes = service.probes ?? [];
  return probes.every((probe, index) => (state.successes[index] ?? 0) >= probe.ready_after);
}

/**
 * The replicas to submit, `count` in each group: the group's lowest retired replica numbers first
 * (their next submission), then numbers no replica has had.
 */
function replicaSubmissions(
  latest: readonly JobsTable[],
  starts: ReadonlyArray<{ group: string; count: number }>,
): ReplicaSubmission[] {
  let nextNum = latest.reduce((max, job) => Math.max(max, job.replica_num + 1), 0);
  const submissions: ReplicaSubmission[] = [];
  for (const { group, count } of starts) {
    const retired = latest
      .filter((job) => isJobFinished(job.status) && replicaGroupOf(job) === group)
      .sort((a, b) => a.replica_num - b.replica_num);
    for (let index = 0; index < count; index += 1) {
      const reused = retired[index];
      submissions.push({
        group,
        replicaNum: reused ? reused.replica_num : nextNum++,
        submissionNum: reused ? reused.submission_num + 1 : 0,
      });
    }
  }
  return submissions;
}
