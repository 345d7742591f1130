/**
 * Runs: apply, stop, delete. Applying writes the run and its jobs and wakes the pipelines;
 * everything after happens in the pipelines. Plans are in run-plan.ts, reading runs in
 * run-reads.ts.
 */

import { type Run, type RunSpec, ServerClientError } from '@dstack/core';
import type { AppContext } from '../context.js';
import { runSpecColumn, type StoredRunSpec } from '../db/json-columns.js';
import { requireEachFound } from '../db/named-resources.js';
import type { ProjectsTable, RunsTable, UsersTable } from '../db/schema.js';
import { timeOrderedUuid } from '../db/time-ordered-ids.js';
import { eventTargets, recordEvents, userActor } from '../events/event-recorder.js';
import { statusChangeEvent } from '../events/status-events.js';
import { hasSshClusterFleet } from '../fleets/cluster-fleets.js';
import { overrideClaimedRows } from '../pipelines/pipeline.js';
import { checkRunFileArchives } from '../repos/file-archives.js';
import { checkRunCode } from '../repos/repos.js';
import { checkSecretReferences } from '../secrets/secret-references.js';
import { projectSecretNames } from '../secrets/secrets.js';
import { markServiceGatewayDue, serviceGatewayOf } from '../services/service-gateway.js';
import { replicaRangeOf, serviceConfigurationOf } from '../services/service-spec.js';
import { expectPollingAttach } from './attach-window.js';
import { checkUtilizationWindow, refuseUtilizationPolicyWithoutGpus } from './gpu-utilization.js';
import { initialReplicaJobSpecs, planJobSpecs } from './job-specs.js';
import { generateRunName } from './run-names.js';
import { offersOfJobs } from './run-plan.js';
import { ACTIVE_RUN_STATUSES, findRunRow, loadRun } from './run-reads.js';
import { newJobRow, newRunRow } from './run-rows.js';
import { nextScheduledStart } from './run-schedule.js';
import { planJobVolumes } from './run-volumes.js';
import { isServiceRun, normalizeRunSpec, withRunSshKey } from './stored-run-spec.js';
import { refuseUnsupportedRunFields } from './unsupported-fields.js';

async function uniqueRunName(app: AppContext, projectId: string): Promise<string> {
  for (;;) {
    const name = generateRunName();
    if (!(await findRunRow(app, projectId, name))) return name;
  }
}

/** Creates the run and its jobs (submission 0) and wakes the pipelines. */
export async function applyRun(
  app: AppContext,
  project: ProjectsTable,
  user: UsersTable,
  requestedSpec: RunSpec,
  options: { attachesByPolling?: boolean } = {},
): Promise<Run> {
  const normalized = await withRunSshKey(app, user, normalizeRunSpec(requestedSpec));
  // The plan's check again: a client may apply without planning.
  const backends = await app.backends.getProjectBackends(project.id);
  refuseUnsupportedRunFields(normalized.configuration, backends, {
    sshClusterFleet: await hasSshClusterFleet(app, project.id),
  });
  checkUtilizationWindow(normalized.configuration, app);
  const runName = normalized.run_name ?? (await uniqueRunName(app, project.id));
  const runSpec: StoredRunSpec = { ...normalized, run_name: runName };
  const now = Date.now();
  const runId = timeOrderedUuid(now);
  if (options.attachesByPolling) expectPollingAttach(app, runId, now);
  const jobSpecs = planJobSpecs(runName, runSpec, app.settings.images);
  // Before anything is stored: a run naming a secret the project lacks is refused (400).
  checkSecretReferences(jobSpecs, await projectSecretNames(app, project.id));
  const volumePlacements = await planJobVolumes(app, project.id, runSpec.configuration, jobSpecs, backends);
  if (runSpec.configuration.utilization_policy) {
    // The plan's refusal again, at the price of looking the offers up: only for such a run.
    const jobOffers = await offersOfJobs(
      app,
      project,
      runSpec.configuration,
      jobSpecs,
      backends,
      volumePlacements,
    );
    refuseUtilizationPolicyWithoutGpus(
      runSpec.configuration,
      jobOffers.map((found) => found.offers),
    );
  }
  // The code the runner will get must be here now: the client uploads it before applying.
  await checkRunCode(app, project.id, runSpec);
  await checkRunFileArchives(app, user.id, runSpec.file_archives ?? []);
  const service = serviceConfigurationOf(runSpec);
  const gateway = service ? await serviceGatewayOf(app, project, runName, service) : null;
  // A service starts with its minimum of replicas (none for `replicas: 0..N`); the run pipeline keeps the count.
  const initialReplicas = service ? replicaRangeOf(service).min : 1;
  // A scheduled run has no job until its first start (run-schedule.ts), as in dstack.
  const nextStart = nextScheduledStart(runSpec.configuration, app.clock());
  const initialJobSpecs =
    nextStart !== null
      ? []
      : service
        ? initialReplicaJobSpecs(runName, runSpec, service, app.settings.images)
        : jobSpecs;
  await app.db.transaction().execute(async (trx) => {
    const existing = await trx
      .selectFrom('runs')
      .select(['id', 'status', 'run_spec', 'deployment_num', 'gateway_id'])
      .where('project_id', '=', project.id)
      .where('run_name', '=', runName)
      .where('deleted', '=', 0)
      .execute();
    const active = existing.find((run) => ACTIVE_RUN_STATUSES.includes(run.status));
    if (active && service && active.status !== 'terminating' && isServiceRun(active.run_spec)) {
      // A changed service applied again is a new deployment, rolled out replica by replica
      // (services/service-scaling.ts); the same one applied again changes nothing.
      if ((active.gateway_id ?? null) !== (gateway?.gateway_id ?? null)) {
        throw new ServerClientError(
          `Service ${runName} is published ${active.gateway_id ? 'on a gateway' : "by the server's proxy"}; a running service cannot move (stop it first: dstack stop ${runName})`,
          { fields: [['run_spec', 'configuration', 'gateway']] },
        );
      }
      const encoded = runSpecColumn.encode(runSpec);
      if (encoded !== active.run_spec) {
        const deploymentNum = (active.deployment_num ?? 0) + 1;
        await trx
          .updateTable('runs')
          .set({ run_spec: encoded, deployment_num: deploymentNum, last_processed_at: 0 })
          .where('id', '=', active.id)
          .execute();
        await recordEvents(trx, app.settings.events, [
          {
            message: `Run updated. Deployment: ${deploymentNum}`,
            actor: userActor(user),
            targets: [eventTargets.run({ id: active.id, project_id: project.id, run_name: runName })],
          },
        ]);
      }
      return;
    }
    if (active) {
      throw new ServerClientError(`Run ${runName} is active; stop it first (dstack stop ${runName})`, {
        code: 'resource_exists',
      });
    }
    // A finished run of the same name is replaced, as in dstack.
    if (existing.length > 0) {
      await trx
        .updateTable('runs')
        .set({ deleted: 1 })
        .where(
          'id',
          'in',
          existing.map((run) => run.id),
        )
        .execute();
    }
    const submitted = newRunRow({ id: runId, projectId: project.id, userId: user.id, runName, runSpec, now });
    // Due at once: the run pipeline waits for its start from there.
    const row: RunsTable =
      nextStart === null
        ? submitted
        : { ...submitted, status: 'pending', next_triggered_at: nextStart, last_processed_at: 0 };
    await trx
      .insertInto('runs')
      .values(
        service
          ? // Due at once: a service that starts with no replica has no job to mark it due.
            {
              ...row,
              desired_replica_count: initialReplicas,
              deployment_num: 0,
              last_processed_at: 0,
              gateway_id: gateway?.gateway_id ?? null,
              service_hostname: gateway?.service_hostname ?? null,
              service_https: gateway ? Number(gateway.service_https) : null,
            }
          : row,
      )
      .execute();
    const jobs = initialJobSpecs.map((jobSpec) => newJobRow(project.id, runId, runName, jobSpec, 0, now));
    if (jobs.length > 0) await trx.insertInto('jobs').values(jobs).execute();
    const actor = userActor(user);
    await recordEvents(trx, app.settings.events, [
      {
        message: `Run submitted. Status: ${row.status.toUpperCase()}`,
        actor,
        targets: [eventTargets.run(row)],
      },
      ...jobs.map((job) => ({
        message: 'Job created on run submission. Status: SUBMITTED',
        actor,
        targets: [eventTargets.job(job)],
      })),
    ]);
  });
  app.wakeUps.wake('runs');
  app.wakeUps.wake('jobs-submitted');
  // Its gateway learns of it now, not at its next pass: a service at zero is reachable at once.
  if (gateway) await markServiceGatewayDue(app, gateway);
  const row = await findRunRow(app, project.id, runName);
  if (!row) throw new Error(`run ${runName} vanished after apply`);
  return loadRun(app, row, project);
}

/** The runs of these names, or a not-found error naming the missing ones. */
async function findRunsByName(app: AppContext, project: ProjectsTable, runNames: readonly string[]) {
  const rows = await app.db
    .selectFrom('runs')
    .selectAll()
    .where('project_id', '=', project.id)
    .where('run_name', 'in', [...runNames])
    .where('deleted', '=', 0)
    .execute();
  return requireEachFound('Run', runNames, rows, (row) => row.run_name);
}

/** Moves active runs to terminating; the run pipeline stops their jobs. */
export async function stopRuns(
  app: AppContext,
  project: ProjectsTable,
  user: UsersTable,
  runNames: readonly string[],
  abort: boolean,
): Promise<void> {
  const rows = await findRunsByName(app, project, runNames);
  const active = rows.filter((row) => ACTIVE_RUN_STATUSES.includes(row.status));
  // A run already stopping changes only when the stop is escalated to an abort.
  const toStop = abort ? active : active.filter((row) => row.status !== 'terminating');
  if (toStop.length === 0) return;
  const stop = {
    status: 'terminating',
    termination_reason: abort ? 'aborted_by_user' : 'stopped_by_user',
  } as const;
  await app.db.transaction().execute(async (trx) => {
    await overrideClaimedRows(
      trx,
      'runs',
      toStop.map((row) => row.id),
      stop,
    );
    // An abort of a run already terminating changes no status: dstack records nothing for it.
    const events = toStop.map((row) => statusChangeEvent('runs', row, stop, userActor(user)));
    await recordEvents(
      trx,
      app.settings.events,
      events.filter((event) => event !== null),
    );
  });
  app.wakeUps.wake('runs');
}

/** Deletes finished runs (their logs stay until the project is deleted). */
export async function deleteRuns(
  app: AppContext,
  project: ProjectsTable,
  user: UsersTable,
  runNames: readonly string[],
): Promise<void> {
  const rows = await findRunsByName(app, project, runNames);
  const active = rows.filter((row) => ACTIVE_RUN_STATUSES.includes(row.status));
  if (active.length > 0) {
    throw new ServerClientError(
      `Cannot delete active runs: ${active.map((row) => row.run_name).join(', ')}; stop them first`,
    );
  }
  await app.db.transaction().execute(async (trx) => {
    await trx
      .updateTable('runs')
      .set({ deleted: 1 })
      .where(
        'id',
        'in',
        rows.map((row) => row.id),
      )
      .execute();
    await recordEvents(
      trx,
      app.settings.events,
      rows.map((row) => ({
        message: 'Run deleted',
        actor: userActor(user),
        targets: [eventTargets.run(row)],
      })),
    );
  });
}
