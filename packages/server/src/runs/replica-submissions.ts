/**
 * A service's replicas submitted by the run pipeline: which ones is decided by
 * services/service-scaling.ts; their job specs (the replica group's own configuration) and job
 * rows are made here, stored with their events, and the job-submitted pipeline woken.
 */
import type { AppContext } from '../context.js';
import { runSpecOf } from '../db/json-columns.js';
import type { JobsTable, RunsTable } from '../db/schema.js';
import { eventTargets, recordEvents, SYSTEM_ACTOR } from '../events/event-recorder.js';
import type { ReplicaSubmission } from '../services/service-scaling.js';
import { buildJobSpecs } from './job-specs.js';
import { newJobRow } from './run-rows.js';

/** Submits each replica's jobs in the run's current deployment. */
export async function submitReplicas(
  app: AppContext,
  run: RunsTable,
  replicas: readonly ReplicaSubmission[],
): Promise<void> {
  const runSpec = runSpecOf(run);
  const now = Date.now();
  const rows: JobsTable[] = [];
  for (const { group, replicaNum, submissionNum } of replicas) {
    const specs = buildJobSpecs(run.run_name, runSpec, replicaNum, app.settings.images, group);
    for (const spec of specs) {
      rows.push({
        ...newJobRow(run.project_id, run.id, run.run_name, spec, submissionNum, now),
        deployment_num: run.deployment_num ?? 0,
      });
    }
  }
  if (rows.length > 0) {
    await app.db.transaction().execute(async (transaction) => {
      await transaction.insertInto('jobs').values(rows).execute();
      await recordEvents(
        transaction,
        app.settings.events,
        rows.map((job) => ({
          message: 'Job created on new submission. Status: SUBMITTED',
          actor: SYSTEM_ACTOR,
          targets: [eventTargets.job(job)],
        })),
      );
    });
  }
  app.wakeUps.wake('jobs-submitted');
}
