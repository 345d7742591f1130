/**
 * Runs: plan, apply, list, get, stop, delete. Applying writes the run and its
 * jobs and wakes the pipelines; everything after happens in the pipelines.
 */

import { randomUUID } from 'node:crypto';
import {
  ConfigurationError,
  fromWireBackendTypes,
  isValidResourceName,
  type JobPlan,
  type JobSpec,
  RESOURCE_NAME_RULE,
  ResourceNotFoundError,
  RUN_PRIORITY_DEFAULT,
  type Run,
  type RunConfiguration,
  type RunPlan,
  type RunSpec,
  type RunStatus,
  ServerClientError,
  validateConfigurationOfType,
} from '@dstack/core';
import { withUserSshKey } from '../accounts/user-ssh-keys.js';
import { explainNoOffers, getOffers, type OfferFilters, offerWarnings } from '../backends/offers.js';
import type { ProjectBackend } from '../backends/registry.js';
import type { AppContext } from '../context.js';
import { jobSpecColumn, runSpecColumn, type StoredRunSpec } from '../db/json-columns.js';
import type { InstancesTable, JobsTable, ProjectsTable, RunsTable, UsersTable } from '../db/schema.js';
import { eventTargets, recordEvents, userActor } from '../events/event-recorder.js';
import { statusChangeEvent } from '../events/status-events.js';
import { hasSshClusterFleet } from '../fleets/cluster-fleets.js';
import { fleetInstanceOffers } from '../fleets/fleet-instance-offers.js';
import { overrideClaimedRows } from '../pipelines/pipeline.js';
import { checkRunFileArchives } from '../repos/file-archives.js';
import { checkRunCode } from '../repos/repos.js';
import { checkSecretReferences } from '../secrets/secret-references.js';
import { projectSecretNames } from '../secrets/secrets.js';
import { expectPollingAttach } from './attach-window.js';
import { dropUnsetNulls, mergeProfileUnder } from './explicit-nulls.js';
import { checkUtilizationWindow, refuseUtilizationPolicyWithoutGpus } from './gpu-utilization.js';
import { type BaseImage, initialReplicaJobSpecs, planJobSpecs } from './job-specs.js';
import { runOf } from './run-models.js';
import { generateRunName } from './run-names.js';
import { nextScheduledStart } from './run-schedule.js';
import { planJobVolumes } from './run-volumes.js';
import { markServiceGatewayDue, serviceGatewayOf } from './service-gateway.js';
import { replicaRangeOf, serviceConfigurationOf } from './service-spec.js';
import { refuseUnsupportedRunFields } from './unsupported-fields.js';

export const ACTIVE_RUN_STATUSES: readonly RunStatus[] = [
  'pending',
  'submitted',
  'provisioning',
  'running',
  'terminating',
];
const DEFAULT_MAX_OFFERS = 50;

/** Validates the configuration (defaults applied) and fixes the run name: the spec as it is stored. */
export function normalizeRunSpec(runSpec: RunSpec): StoredRunSpec {
  const validated = validateConfigurationOfType(
    mergeProfileUnder(dropUnsetNulls(runSpec.configuration), runSpec.profile),
    ['task', 'service', 'dev-environment'],
    ['run_spec', 'configuration'],
  );
  const configuration: RunConfiguration = {
    ...validated,
    // As dstack's server: the spec it stores and echoes says the priority the run has.
    priority: validated.priority ?? RUN_PRIORITY_DEFAULT,
    ...(validated.backends === undefined ? {} : { backends: fromWireBackendTypes(validated.backends) }),
  };
  const runName = runSpec.run_name ?? configuration.name ?? null;
  if (runName !== null && !isValidResourceName(runName)) {
    throw new ConfigurationError(`invalid run name: expected ${RESOURCE_NAME_RULE}`, {
      path: ['run_spec', 'run_name'],
    });
  }
  // The profile is merged into the configuration: stored without it, as our CLI sends it.
  return { ...runSpec, profile: null, run_name: runName, configuration };
}

/**
 * dstack's image name for "no image, never pull" (`dstack offer` sends it with `for_offers_only`,
 * and no commands): such a plan only lists offers, so the job spec takes the server's default
 * image instead, which every backend and runtime can plan with, and dstack's `:` for a command.
 */
const PLACEHOLDER_IMAGE = 'scratch';

function withoutPlaceholderImage(runSpec: StoredRunSpec): StoredRunSpec {
  if (runSpec.configuration.image !== PLACEHOLDER_IMAGE) return runSpec;
  const { image: _image, ...configuration } = runSpec.configuration;
  if ('commands' in configuration && configuration.commands.length === 0) configuration.commands = [':'];
  return { ...runSpec, configuration: configuration as RunConfiguration };
}

/** The server's image settings (`DSTACK_DOCKER_BASE_IMAGE`..., `DSTACK_DIND_IMAGE`). */
export function baseImageOf(app: AppContext): BaseImage {
  const { baseImage, baseImageVersion, baseImageUbuntuVersion, dindImage } = app.settings;
  return { baseImage, version: baseImageVersion, ubuntuVersion: baseImageUbuntuVersion, dindImage };
}

export function offerFiltersOf(configuration: RunConfiguration): OfferFilters {
  return {
    backends: configuration.backends,
    regions: configuration.regions,
    instanceTypes: configuration.instance_types,
    // The profile's zones, cut to its volumes' zones by the job-submitted pass (job-volumes.ts).
    availabilityZones: configuration.availability_zones,
  };
}

/**
 * The spec with `ssh_key_pub` set: a spec without one (dstack's clients send none unless given
 * `--ssh-identity`) is reachable with the user's own key, as in dstack.
 */
async function withRunSshKey(
  app: AppContext,
  user: UsersTable,
  runSpec: StoredRunSpec,
): Promise<StoredRunSpec> {
  if (runSpec.ssh_key_pub) return runSpec;
  return { ...runSpec, ssh_key_pub: (await withUserSshKey(app, user)).ssh_public_key ?? null };
}

export async function getRunPlan(
  app: AppContext,
  project: ProjectsTable,
  user: UsersTable,
  requestedSpec: RunSpec,
  maxOffers: number | null | undefined,
  options: { forOffersOnly?: boolean } = {},
): Promise<RunPlan> {
  const normalized = await withRunSshKey(app, user, normalizeRunSpec(requestedSpec));
  const runSpec = options.forOffersOnly ? withoutPlaceholderImage(normalized) : normalized;
  const backends = await app.backends.getProjectBackends(project.id);
  refuseUnsupportedRunFields(runSpec.configuration, backends, {
    sshClusterFleet: await hasSshClusterFleet(app, project.id),
  });
  checkUtilizationWindow(runSpec.configuration, app);
  const jobSpecs = planJobSpecs(runSpec.run_name ?? 'plan', runSpec, baseImageOf(app));
  checkSecretReferences(jobSpecs, await projectSecretNames(app, project.id));
  const plannedService = serviceConfigurationOf(runSpec);
  // The gateway's refusals come with the plan, before anything is confirmed.
  if (plannedService) await serviceGatewayOf(app, project, runSpec.run_name ?? 'plan', plannedService);
  // Each job runs only where its volumes are: that narrows its offers.
  const volumePlacements = await planJobVolumes(app, project.id, runSpec.configuration, jobSpecs, backends);
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
  const jobPlans: JobPlan[] = await Promise.all(
    jobSpecs.map(async (jobSpec, index) => {
      const { offers, failures, filters, mayCreate } = jobOffers[index]!;
      const exclusions =
        offers.length === 0 && mayCreate
          ? await explainNoOffers(backends, jobSpec.requirements, filters, {
              deadlineMs: app.settings.offersDeadlineMs,
            })
          : [];
      return {
        job_spec: jobSpec,
        offers: offers.slice(0, maxOffers ?? DEFAULT_MAX_OFFERS),
        total_offers: offers.length,
        max_price: offers.reduce((max, offer) => Math.max(max, offer.price), 0) || null,
        exclusions,
        warnings: offerWarnings(failures),
      };
    }),
  );
  const current = runSpec.run_name ? await findRunRow(app, project.id, runSpec.run_name) : null;
  return {
    project_name: project.name,
    user: user.name,
    run_spec: runSpec,
    job_plans: jobPlans,
    current_resource: current ? await loadRun(app, current, project) : null,
    // An active service applied again is updated in place (a rolling deployment), as in dstack.
    action:
      current &&
      ACTIVE_RUN_STATUSES.includes(current.status) &&
      current.status !== 'terminating' &&
      serviceConfigurationOf(runSpec) &&
      isServiceRun(current.run_spec)
        ? 'update'
        : 'create',
  };
}

/**
 * Each job's offers, all of them: the project's fleet instances it fits first, as dstack lists
 * them (the run takes one of them before launching), then the backends' offers by price, in the
 * places its volumes allow.
 */
async function offersOfJobs(
  app: AppContext,
  project: ProjectsTable,
  configuration: RunConfiguration,
  jobSpecs: readonly JobSpec[],
  backends: readonly ProjectBackend[],
  volumePlacements: Awaited<ReturnType<typeof planJobVolumes>>,
) {
  // With `creation_policy: reuse` the run only takes fleet instances, so backends offer nothing.
  const mayCreate = configuration.creation_policy !== 'reuse';
  return Promise.all(
    jobSpecs.map(async (jobSpec, index) => {
      const placement = volumePlacements[index]?.configuration ?? configuration;
      const filters = offerFiltersOf(placement);
      const instanceOffers = await fleetInstanceOffers(app, project.id, placement, jobSpec.requirements);
      const found = mayCreate
        ? await getOffers(backends, jobSpec.requirements, filters, {
            deadlineMs: app.settings.offersDeadlineMs,
          })
        : { offers: [], failures: [] };
      const offers = [...instanceOffers, ...found.offers.map((entry) => entry.offer)];
      return { offers, failures: found.failures, filters, mayCreate };
    }),
  );
}

/** The newest live (not deleted) run named `runName` in the project. */
export async function findRunRow(
  app: AppContext,
  projectId: string,
  runName: string,
): Promise<RunsTable | null> {
  const row = await app.db
    .selectFrom('runs')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('run_name', '=', runName)
    .where('deleted', '=', 0)
    .orderBy('submitted_at', 'desc')
    .executeTakeFirst();
  return row ?? null;
}

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
  const runId = randomUUID();
  if (options.attachesByPolling) expectPollingAttach(app, runId, now);
  const jobSpecs = planJobSpecs(runName, runSpec, baseImageOf(app));
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
        ? initialReplicaJobSpecs(runName, runSpec, service, baseImageOf(app))
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
      // (service-scaling.ts); the same one applied again changes nothing.
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
        await recordEvents(trx, app.settings, [
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
    await recordEvents(trx, app.settings, [
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
  if (gateway) await markServiceGatewayDue(app, runId);
  const row = await findRunRow(app, project.id, runName);
  if (!row) throw new Error(`run ${runName} vanished after apply`);
  return loadRun(app, row, project);
}

/** Whether a stored run spec is a service's. */
function isServiceRun(storedRunSpec: string): boolean {
  return serviceConfigurationOf(runSpecColumn.decode(storedRunSpec, 'runs.run_spec')) !== null;
}

/**
 * A new run row: `submitted`, unclaimed, and not due (a new run has nothing to follow until its
 * jobs move, and they mark it due then).
 */
export function newRunRow(fields: {
  id: string;
  projectId: string;
  userId: string;
  runName: string;
  runSpec: StoredRunSpec;
  now: number;
}): RunsTable {
  return {
    id: fields.id,
    project_id: fields.projectId,
    user_id: fields.userId,
    run_name: fields.runName,
    status: 'submitted',
    termination_reason: null,
    run_spec: runSpecColumn.encode(fields.runSpec),
    submitted_at: fields.now,
    last_processed_at: fields.now,
    resubmission_attempt: 0,
    next_triggered_at: null,
    fleet_id: null,
    deleted: 0,
    priority: fields.runSpec.configuration.priority ?? RUN_PRIORITY_DEFAULT,
    lock_expires_at: null,
    lock_token: null,
    lock_owner: null,
  };
}

export function newJobRow(
  projectId: string,
  runId: string,
  runName: string,
  jobSpec: JobSpec,
  submissionNum: number,
  now: number,
): JobsTable {
  return {
    id: randomUUID(),
    project_id: projectId,
    run_id: runId,
    run_name: runName,
    job_num: jobSpec.job_num,
    replica_num: jobSpec.replica_num,
    job_name: jobSpec.job_name,
    submission_num: submissionNum,
    status: 'submitted',
    termination_reason: null,
    termination_reason_message: null,
    exit_status: null,
    job_spec_data: jobSpecColumn.encode(jobSpec),
    job_provisioning_data: null,
    job_runtime_data: null,
    instance_id: null,
    instance_assigned: 0,
    submitted_at: now,
    last_processed_at: 0,
    finished_at: null,
    runner_timestamp: null,
    remove_at: null,
    disconnected_at: null,
    inactivity_secs: null,
    lock_expires_at: null,
    lock_token: null,
    lock_owner: null,
  };
}

/** The run with all its job submissions, as the API returns it. */
export async function loadRun(
  app: AppContext,
  run: RunsTable,
  project: Pick<ProjectsTable, 'name'>,
): Promise<Run> {
  const [runs] = await loadRuns(app, [run], new Map([[run.project_id, project.name]]));
  return runs as Run;
}

export async function loadRuns(
  app: AppContext,
  runs: readonly RunsTable[],
  projectNames: ReadonlyMap<string, string>,
): Promise<Run[]> {
  if (runs.length === 0) return [];
  const runIds = runs.map((run) => run.id);
  const jobs = await app.db.selectFrom('jobs').selectAll().where('run_id', 'in', runIds).execute();
  const instanceIds = [
    ...new Set(jobs.map((job) => job.instance_id).filter((id): id is string => id !== null)),
  ];
  const instances: InstancesTable[] =
    instanceIds.length > 0
      ? await app.db.selectFrom('instances').selectAll().where('id', 'in', instanceIds).execute()
      : [];
  const instancesById = new Map(instances.map((instance) => [instance.id, instance]));
  const userIds = [...new Set(runs.map((run) => run.user_id))];
  const users = await app.db.selectFrom('users').select(['id', 'name']).where('id', 'in', userIds).execute();
  const userNames = new Map(users.map((user) => [user.id, user.name]));
  const jobsByRun = new Map<string, JobsTable[]>();
  for (const job of jobs) jobsByRun.set(job.run_id, [...(jobsByRun.get(job.run_id) ?? []), job]);
  return runs.map((run) =>
    runOf(
      run,
      projectNames.get(run.project_id) ?? '',
      userNames.get(run.user_id) ?? '',
      jobsByRun.get(run.id) ?? [],
      instancesById,
      app.sshProxy,
    ),
  );
}

export async function getRun(
  app: AppContext,
  project: ProjectsTable,
  selector: { run_name?: string | null; id?: string | null },
): Promise<Run> {
  let row: RunsTable | undefined | null;
  if (selector.id) {
    row = await app.db
      .selectFrom('runs')
      .selectAll()
      .where('project_id', '=', project.id)
      .where('id', '=', selector.id)
      .executeTakeFirst();
  } else if (selector.run_name) {
    row = await findRunRow(app, project.id, selector.run_name);
  }
  if (!row) throw new ResourceNotFoundError(`Run ${selector.run_name ?? selector.id} not found`);
  return loadRun(app, row, project);
}

export interface ListRunsOptions {
  projectIds: readonly string[] | null;
  onlyActive: boolean;
  limit: number;
  prevSubmittedAt?: number | null;
  prevRunId?: string | null;
  /** Oldest first (the cursor then pages forward). */
  ascending?: boolean;
  repoId?: string | null;
  username?: string | null;
  /** false: runs without their jobs. */
  includeJobs?: boolean;
  /** The last N submissions of each job; null: all. */
  jobSubmissionsLimit?: number | null;
}

export async function listRuns(app: AppContext, options: ListRunsOptions): Promise<Run[]> {
  let query = app.db.selectFrom('runs').selectAll('runs').where('runs.deleted', '=', 0);
  if (options.projectIds) {
    if (options.projectIds.length === 0) return [];
    query = query.where('runs.project_id', 'in', [...options.projectIds]);
  }
  if (options.onlyActive) query = query.where('runs.status', 'in', [...ACTIVE_RUN_STATUSES]);
  if (options.username != null) {
    query = query.innerJoin('users', 'users.id', 'runs.user_id').where('users.name', '=', options.username);
  }
  const ascending = options.ascending === true;
  if (options.prevSubmittedAt != null) {
    const cursor = options.prevSubmittedAt;
    const prevId = options.prevRunId ?? '';
    const beyond = ascending ? '>' : '<';
    query = query.where((eb) =>
      eb.or([
        eb('runs.submitted_at', beyond, cursor),
        eb.and([eb('runs.submitted_at', '=', cursor), eb('runs.id', beyond, prevId)]),
      ]),
    );
  }
  const direction = ascending ? 'asc' : 'desc';
  query = query.orderBy('runs.submitted_at', direction).orderBy('runs.id', direction);
  // The repo is inside the run spec JSON: filtered here, before the limit, so pages stay full.
  const repoId = options.repoId;
  const rows =
    repoId == null
      ? await query.limit(options.limit).execute()
      : (await query.execute())
          .filter((row) => (JSON.parse(row.run_spec) as { repo_id?: string | null }).repo_id === repoId)
          .slice(0, options.limit);
  const projects = await app.db
    .selectFrom('projects')
    .select(['id', 'name'])
    .where('id', 'in', [...new Set(rows.map((row) => row.project_id)), ''])
    .execute();
  const runs = await loadRuns(app, rows, new Map(projects.map((project) => [project.id, project.name])));
  return runs.map((run) => trimRunJobs(run, options));
}

/** The run with the jobs and job submissions that `runs/list` asked for. */
function trimRunJobs(run: Run, options: ListRunsOptions): Run {
  if (options.includeJobs === false) return { ...run, jobs: [] };
  const limit = options.jobSubmissionsLimit;
  if (limit == null) return run;
  return {
    ...run,
    jobs: run.jobs.map((job) => ({
      ...job,
      job_submissions: limit === 0 ? [] : job.job_submissions.slice(-limit),
    })),
  };
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
  const missing = runNames.filter((name) => !rows.some((row) => row.run_name === name));
  if (missing.length > 0) throw new ResourceNotFoundError(`Run ${missing.join(', ')} not found`);
  return rows;
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
      app.settings,
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
      app.settings,
      rows.map((row) => ({
        message: 'Run deleted',
        actor: userActor(user),
        targets: [eventTargets.run(row)],
      })),
    );
  });
}
