/**
 * A run's status follows its jobs (the run pipeline's `followJobs`, run-pipeline.ts). For the
 * usual run, one job and not a service, the job's own pass can say what the run's pass would:
 * its run is `provisioning` once the job has an instance and `running` once the job runs. The
 * job's pass moves the run itself then, with its event, instead of making it due for a pass of
 * its own (a claim, a read of its jobs and a release per step). Anything else, or a run whose
 * status moved since the job's pass read it or that a run pass holds, is left to that pass.
 */
import type { AppContext } from '../context.js';
import { jobSpecOf, runSpecOf } from '../db/json-columns.js';
import type { JobsTable, ProjectsTable, RunsTable } from '../db/schema.js';
import { recordStatusChange } from '../events/status-events.js';
import { observeSubmitToProvision } from '../metrics/run-client-metrics.js';
import { unclaimedAt } from '../pipelines/pipeline.js';
import { inReleaseTransaction } from '../pipelines/release-groups.js';
import { markRunDue } from './job-pass.js';

/** What the job has just become, of what its run follows. */
export type FollowedJobStatus = 'provisioning' | 'running';

/** The statuses a run moves from to follow a job that became `status`, as `followJobs` would. */
const RUN_STATUSES_BEFORE: Record<FollowedJobStatus, readonly string[]> = {
  provisioning: ['submitted'],
  running: ['submitted', 'provisioning'],
};

/**
 * The run of `job` (as the job's pass read it) after the job's release to `status`: moved here when
 * the release took (`released`) and the job is its run's only one, else made due for the run pipeline.
 */
export async function runFollowsJob(
  app: AppContext,
  context: { run: RunsTable; project: ProjectsTable; job: JobsTable },
  status: FollowedJobStatus,
  released: boolean,
): Promise<void> {
  const { run, project, job } = context;
  const type = runSpecOf(run).configuration.type;
  const follows =
    released &&
    type !== 'service' &&
    jobSpecOf(job).jobs_per_replica === 1 &&
    RUN_STATUSES_BEFORE[status].includes(run.status);
  if (!(follows && (await moveRun(app, run, status)))) {
    await markRunDue(app, job.run_id);
    return;
  }
  // dstack's `_emit_active_metrics`: submitted → provisioning (or straight to running).
  if (run.status === 'submitted') {
    observeSubmitToProvision(Math.max(0, Date.now() - run.submitted_at) / 1000, project.name, type);
  }
}

/** Moves `run` to `status` with its event, when it is still as read and no run pass holds it. */
async function moveRun(app: AppContext, run: RunsTable, status: FollowedJobStatus): Promise<boolean> {
  // A resubmission that got an instance starts its backoff over (run-pipeline.ts does the same).
  const update = status === 'provisioning' ? { status, resubmission_attempt: 0 } : { status };
  const now = Date.now();
  return inReleaseTransaction(app.db, app.dialect, async (transaction) => {
    const result = await transaction
      .updateTable('runs')
      .set(update)
      .where('id', '=', run.id)
      .where('status', '=', run.status)
      .where(unclaimedAt(now))
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) return false;
    await recordStatusChange(transaction, app.settings.events, 'runs', run, update);
    return true;
  });
}
