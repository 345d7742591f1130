/**
 * Jobs in `submitted`: place each on an idle fleet instance that fits, or
 * provision new capacity by trying offers in price order (capacity errors move
 * on to the next offer). The job's claim makes this exclusive: with several
 * servers on one database, a job is provisioned by exactly one of them.
 */
import { randomUUID } from 'node:crypto';
import {
  DEFAULT_RUN_IDLE_DURATION,
  getProvisioningTimeoutSeconds,
  type InstanceOfferWithAvailability,
  isAvailable,
  type JobProvisioningData,
  type JobSpec,
  type RunSpec,
} from '@dstack/core';
import { sql } from 'kysely';
import type { AppContext } from '../context.js';
import type { FleetsTable, InstancesTable, JobsTable, ProjectsTable, RunsTable } from '../db/schema.js';
import { type ProjectBackend, runServicesOf } from '../run-services.js';
import {
  activeFleets,
  createRunFleet,
  type FleetConfigurationFields,
  fleetConfigurationOf,
} from '../services/fleets.js';
import { offerSatisfies } from '../services/instance-matching.js';
import { type BackendOffer, explainNoOffers, getOffers } from '../services/offers.js';
import { offerFiltersOf } from '../services/runs.js';
import type { PipelineDefinition, RowLock } from './pipeline.js';
import { dueIn, errorMessage, jobSpecOf, markRunDue, projectOf, runRowOf } from './rows.js';

const MIN_INTERVAL_MS = 1_000;

interface RunConfigurationView {
  fleets?: string[];
  backends?: string[];
  creation_policy?: 'reuse' | 'reuse-or-create';
  idle_duration?: number | 'off';
}

function runConfiguration(run: RunsTable): { spec: RunSpec; configuration: RunConfigurationView } {
  const spec = JSON.parse(run.run_spec) as RunSpec;
  return { spec, configuration: spec.configuration as RunConfigurationView };
}

function idleSeconds(run: RunConfigurationView, fleet: FleetConfigurationFields): number | null {
  const value = run.idle_duration ?? fleet.idle_duration ?? DEFAULT_RUN_IDLE_DURATION;
  return value === 'off' ? null : value;
}

async function failJob(
  lock: RowLock,
  app: AppContext,
  job: JobsTable,
  reason: string,
  message: string,
): Promise<void> {
  await lock.release({
    status: 'terminating',
    termination_reason: reason,
    termination_reason_message: message,
    last_processed_at: 0,
  });
  runServicesOf(app).wakeUps.wake('jobs-terminating');
  await markRunDue(app, job.run_id);
}

/** Candidate fleets for the run: those it names, else all active ones; a run-made fleet when the project has none. */
async function candidateFleets(
  app: AppContext,
  run: RunsTable,
  configuration: RunConfigurationView,
): Promise<FleetsTable[]> {
  const fleets = await activeFleets(app, run.project_id);
  if (configuration.fleets?.length)
    return fleets.filter((fleet) => configuration.fleets?.includes(fleet.name));
  return fleets;
}

/** Takes one block of an idle instance that fits; returns it, or null (and whether a fitting one was locked). */
async function assignIdleInstance(
  app: AppContext,
  job: JobsTable,
  jobSpec: JobSpec,
  fleets: readonly FleetsTable[],
  configuration: RunConfigurationView,
): Promise<{ instance: InstancesTable | null; fittingWasLocked: boolean }> {
  if (fleets.length === 0) return { instance: null, fittingWasLocked: false };
  const idle = await app.db
    .selectFrom('instances')
    .selectAll()
    .where('project_id', '=', job.project_id)
    .where(
      'fleet_id',
      'in',
      fleets.map((fleet) => fleet.id),
    )
    .where('status', '=', 'idle')
    .where('deleted', '=', 0)
    .orderBy('price')
    .execute();
  let fittingWasLocked = false;
  for (const instance of idle) {
    if (!instance.offer) continue;
    if (configuration.backends?.length && !configuration.backends.includes(instance.backend ?? '')) continue;
    const offer = JSON.parse(instance.offer) as InstanceOfferWithAvailability;
    if (!offerSatisfies(offer, jobSpec.requirements)) continue;
    const now = Date.now();
    const result = await app.db
      .updateTable('instances')
      .set({ status: 'busy', busy_blocks: sql`busy_blocks + 1`, idle_since: null })
      .where('id', '=', instance.id)
      .where('status', '=', 'idle')
      .where('deleted', '=', 0)
      .where(sql<boolean>`busy_blocks < total_blocks`)
      .where(sql<boolean>`(lock_expires_at IS NULL OR lock_expires_at < ${now})`)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 1) return { instance, fittingWasLocked };
    fittingWasLocked = true;
  }
  return { instance: null, fittingWasLocked };
}

async function nextInstanceNum(app: AppContext, fleetId: string): Promise<number> {
  const row = await app.db
    .selectFrom('instances')
    .select(sql<number>`COALESCE(MAX(instance_num), -1)`.as('max'))
    .where('fleet_id', '=', fleetId)
    .executeTakeFirst();
  return Number(row?.max ?? -1) + 1;
}

/** Offers of the first fleet that can grow and has any; the fleet's own backend and region limits apply. */
async function offersForNewCapacity(
  app: AppContext,
  fleets: readonly FleetsTable[],
  backends: readonly ProjectBackend[],
  run: RunsTable,
  spec: RunSpec,
  jobSpec: JobSpec,
): Promise<{ fleet: FleetsTable | null; offers: BackendOffer[] }> {
  const runFilters = offerFiltersOf(spec.configuration);
  for (const fleet of fleets) {
    const fleetConfiguration = fleetConfigurationOf(fleet);
    const max = fleetConfiguration.nodes?.max ?? null;
    if (max !== null) {
      const count = await app.db
        .selectFrom('instances')
        .select(sql<number>`COUNT(*)`.as('count'))
        .where('fleet_id', '=', fleet.id)
        .where('deleted', '=', 0)
        .where('status', 'not in', ['terminating', 'terminated'])
        .executeTakeFirst();
      if (Number(count?.count ?? 0) >= max) continue;
    }
    const fleetBackends = fleetConfiguration.backends;
    const allowed = backends.filter(
      (backend) => !fleetBackends?.length || fleetBackends.includes(backend.type),
    );
    const { offers } = await getOffers(allowed, jobSpec.requirements, {
      ...runFilters,
      regions: runFilters.regions ?? fleetConfiguration.regions,
      instanceTypes: runFilters.instanceTypes ?? fleetConfiguration.instance_types,
    });
    const available = offers.filter((entry) => isAvailable(entry.offer.availability));
    if (available.length > 0) return { fleet, offers: available };
  }
  if (fleets.length === 0) {
    const { offers } = await getOffers(backends, jobSpec.requirements, runFilters);
    const available = offers.filter((entry) => isAvailable(entry.offer.availability));
    if (available.length > 0)
      return { fleet: await createRunFleet(app, run.project_id, run.run_name), offers: available };
  }
  return { fleet: null, offers: [] };
}

async function provision(
  app: AppContext,
  job: JobsTable,
  lock: RowLock,
  run: RunsTable,
  project: ProjectsTable,
  fleets: readonly FleetsTable[],
  configuration: RunConfigurationView,
): Promise<void> {
  const { spec } = runConfiguration(run);
  const jobSpec = jobSpecOf(job);
  const backends = await runServicesOf(app).backends.getProjectBackends(project.id);
  const { fleet, offers } = await offersForNewCapacity(app, fleets, backends, run, spec, jobSpec);
  if (!fleet || offers.length === 0) {
    const exclusions = await explainNoOffers(
      backends,
      jobSpec.requirements,
      offerFiltersOf(spec.configuration),
    );
    const details = exclusions.map((entry) =>
      entry.excluded > 0 ? `${entry.requirement} excluded ${entry.excluded} offer(s)` : entry.requirement,
    );
    const noFleet = fleets.length === 0 && configuration.fleets?.length ? 'no matching fleet found; ' : '';
    await failJob(
      lock,
      app,
      job,
      'failed_to_start_due_to_no_capacity',
      `${noFleet}no offers match the requirements${details.length ? `: ${details.join('; ')}` : ''}`,
    );
    return;
  }
  const fleetConfiguration = fleetConfigurationOf(fleet);
  const now = Date.now();
  const instanceId = randomUUID();
  const instanceNum = await nextInstanceNum(app, fleet.id);
  // The placeholder is written before any cloud call, so every machine we create is tracked.
  await app.db
    .insertInto('instances')
    .values({
      id: instanceId,
      project_id: project.id,
      fleet_id: fleet.id,
      name: `${fleet.name}-${instanceNum}`,
      instance_num: instanceNum,
      status: 'pending',
      unreachable: 0,
      termination_reason: null,
      termination_reason_message: null,
      created_at: now,
      last_processed_at: now,
      started_at: null,
      finished_at: null,
      backend: null,
      region: null,
      price: null,
      offer: null,
      job_provisioning_data: null,
      requirements: JSON.stringify(jobSpec.requirements),
      instance_configuration: null,
      termination_idle_time: idleSeconds(configuration, fleetConfiguration),
      termination_deadline: null,
      provisioning_deadline: null,
      first_termination_retry_at: null,
      last_termination_retry_at: null,
      idle_since: null,
      total_blocks: 1,
      busy_blocks: 1,
      deleted: 0,
      lock_expires_at: null,
      lock_token: null,
      lock_owner: null,
    })
    .execute();
  const user = await app.db
    .selectFrom('users')
    .select('name')
    .where('id', '=', run.user_id)
    .executeTakeFirst();
  const errors: string[] = [];
  for (const { backend, offer } of offers.slice(0, app.settings.maxOffersTried)) {
    let provisioningData: JobProvisioningData;
    try {
      provisioningData = await backend.compute.runJob({
        run: {
          id: run.id,
          project_name: project.name,
          user: user?.name ?? '',
          run_spec: {
            run_name: run.run_name,
            ssh_key_pub: spec.ssh_key_pub ?? null,
            configuration: spec.configuration as { [key: string]: unknown },
            merged_profile: null,
          },
        },
        job: {
          job_spec: jobSpec as unknown as Parameters<typeof backend.compute.runJob>[0]['job']['job_spec'],
        },
        offer,
        projectSshPublicKey: project.ssh_public_key,
        projectSshPrivateKey: app.encryption.decrypt(project.ssh_private_key),
        volumes: [],
        placementGroup: null,
        requirements: jobSpec.requirements,
      });
    } catch (error) {
      errors.push(`${backend.type}/${offer.region}/${offer.instance.name}: ${errorMessage(error)}`);
      continue;
    }
    const timeoutSeconds = getProvisioningTimeoutSeconds(backend.plugin, offer.instance.name);
    await app.db
      .updateTable('instances')
      .set({
        status: 'provisioning',
        backend: backend.type,
        region: offer.region,
        price: offer.price,
        offer: JSON.stringify(offer),
        job_provisioning_data: JSON.stringify(provisioningData),
        started_at: Date.now(),
        provisioning_deadline: Date.now() + timeoutSeconds * 1000,
        last_processed_at: 0,
      })
      .where('id', '=', instanceId)
      .execute();
    await lock.release({
      status: 'provisioning',
      instance_id: instanceId,
      instance_assigned: 1,
      job_provisioning_data: JSON.stringify(provisioningData),
      last_processed_at: 0,
    });
    runServicesOf(app).wakeUps.wake('instances', 'jobs-running');
    await markRunDue(app, job.run_id);
    return;
  }
  await app.db
    .updateTable('instances')
    .set({ status: 'terminated', termination_reason: 'no_offers', deleted: 1, finished_at: Date.now() })
    .where('id', '=', instanceId)
    .execute();
  await failJob(
    lock,
    app,
    job,
    'failed_to_start_due_to_no_capacity',
    `every offer failed: ${errors.join('; ')}`,
  );
}

export function jobSubmittedPipeline(app: AppContext): PipelineDefinition<JobsTable> {
  return {
    name: 'jobs-submitted',
    table: 'jobs',
    statuses: ['submitted'],
    minIntervalMs: MIN_INTERVAL_MS,
    workers: 40,
    async process(job, lock) {
      const run = await runRowOf(app, job.run_id);
      // A stopping run moves its jobs to terminating itself.
      if (run.status === 'terminating' || run.status === 'pending') return;
      const project = await projectOf(app, job.project_id);
      const { configuration } = runConfiguration(run);
      const jobSpec = jobSpecOf(job);
      const fleets = await candidateFleets(app, run, configuration);
      const { instance, fittingWasLocked } = await assignIdleInstance(
        app,
        job,
        jobSpec,
        fleets,
        configuration,
      );
      if (instance) {
        await lock.release({
          status: 'provisioning',
          instance_id: instance.id,
          instance_assigned: 1,
          job_provisioning_data: instance.job_provisioning_data,
          last_processed_at: 0,
        });
        runServicesOf(app).wakeUps.wake('jobs-running');
        await markRunDue(app, job.run_id);
        return;
      }
      // A fitting idle instance is being checked by its pipeline: try it again shortly rather than buy another.
      if (fittingWasLocked) {
        await lock.release({ last_processed_at: dueIn(100, MIN_INTERVAL_MS) });
        return;
      }
      if (configuration.creation_policy === 'reuse') {
        await failJob(
          lock,
          app,
          job,
          'failed_to_start_due_to_no_capacity',
          'no idle instance fits the run and creation_policy is reuse',
        );
        return;
      }
      await provision(app, job, lock, run, project, fleets, configuration);
    },
  };
}
