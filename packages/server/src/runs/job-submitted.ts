/**
 * Jobs in `submitted`: place each on an idle fleet instance that fits, or
 * provision new capacity by trying offers in price order (capacity errors move
 * on to the next offer). The job's claim makes this exclusive: with several
 * servers on one database, a job is provisioned by exactly one of them.
 *
 * New capacity is recorded on the job (`instance_id`, not yet assigned) before
 * the backend is called, and the pending instance's id is the launch's
 * idempotency key: when a server dies mid-launch, the server that claims the
 * job next launches that same instance again and the backend returns the
 * machine it already started, instead of a second one nobody knows of.
 */
import {
  DEFAULT_RETRY_DURATION,
  DEFAULT_RUN_IDLE_DURATION,
  type FleetConfiguration,
  isAvailable,
  type JobSpec,
  type JobTerminationReason,
  type PlacementGroup,
  type RunConfiguration,
  type Volume,
} from '@dstack/core';
import { sql, type Transaction } from 'kysely';
import { projectOf } from '../accounts/projects.js';
import { type BackendOffer, explainNoOffers, getOffers } from '../backends/offers.js';
import type { ProjectBackend } from '../backends/registry.js';
import type { AppContext } from '../context.js';
import {
  fleetConfigurationOf,
  instanceOfferOf,
  jobProvisioningDataColumn,
  jobRuntimeDataColumn,
  jobSpecOf,
  runSpecOf,
} from '../db/json-columns.js';
import type { Database, FleetsTable, InstancesTable, JobsTable, RunsTable } from '../db/schema.js';
import { eventTargets, recordEvent, SYSTEM_ACTOR } from '../events/event-recorder.js';
import { recordStatusChange } from '../events/status-events.js';
import {
  type ClusterLocation,
  clusterLocationOf,
  clusterMasterInstance,
  instanceAtClusterLocation,
  isClusterFleet,
  offersAtClusterLocation,
} from '../fleets/cluster-fleets.js';
import { type FittingInstance, fittingFleetInstances } from '../fleets/fleet-instance-offers.js';
import { fleetKeepsInstance } from '../fleets/fleet-rows.js';
import { activeFleets, createRunFleet } from '../fleets/fleets.js';
import { makesRoomRatherThanReused, sharesServerHost } from '../fleets/host-instance-reuse.js';
import {
  offersWithFittingShare,
  requirementsForSplitInstance,
  runtimeDataForShare,
  shareableOffers,
  shareOfLaunchedInstance,
  shareOfNewInstance,
  smallestFittingShare,
} from '../fleets/instance-blocks.js';
import {
  describeLaunchFailures,
  failedForCapacityOnly,
  insertPendingInstance,
  type LaunchFailure,
  launchOnFirstOffer,
  runJobParamsOf,
} from '../fleets/instance-launch.js';
import {
  clusterPlacementOf,
  launchPlacementGroup,
  retireOtherPlacementGroups,
} from '../fleets/placement-groups.js';
import type { PipelineDefinition, RowLock } from '../pipelines/pipeline.js';
import { dueIn } from '../pipelines/pipeline.js';
import { JobVolumeError, volumesHeldElsewhere } from '../volumes/job-volumes.js';
import { type ClusterJobPlacement, clusterJobPlacement, markClusterWorkersDue } from './cluster-jobs.js';
import { type JobPassContext, markRunDue, runRowOf } from './job-pass.js';
import {
  aheadForInstance,
  aheadForOffer,
  type JobAhead,
  jobsAhead,
  recordWaitForPriority,
} from './run-priority.js';
import { type JobVolumePlacement, jobVolumePlacement, launchVolumesOf } from './run-volumes.js';
import { offerFiltersOf } from './runs.js';

const MIN_INTERVAL_MS = 1_000;
/** How soon a worker of a cluster whose master has no instance yet looks again. */
const CLUSTER_WAIT_MS = 500;

function idleSeconds(run: RunConfiguration, fleet: FleetConfiguration): number | null {
  const value = run.idle_duration ?? fleet.idle_duration ?? DEFAULT_RUN_IDLE_DURATION;
  return value === 'off' ? null : value;
}

async function failJob(
  context: Pick<JobPassContext, 'app' | 'lock' | 'job'>,
  reason: JobTerminationReason,
  message: string,
): Promise<void> {
  const { app, lock, job } = context;
  await lock.release({
    // A launch that failed on every offer leaves no instance for the job.
    instance_id: null,
    status: 'terminating',
    termination_reason: reason,
    termination_reason_message: message,
    last_processed_at: 0,
  });
  app.wakeUps.wake('jobs-terminating');
  await markRunDue(app, job.run_id);
}

/**
 * Candidate fleets for the run: those it names, else all active ones; a run-made fleet when the
 * project has none. A multi-node run's master takes cluster fleets only (cluster-jobs.ts).
 */
async function candidateFleets(
  app: AppContext,
  run: RunsTable,
  configuration: RunConfiguration,
  cluster: ClusterJobPlacement,
): Promise<FleetsTable[]> {
  if (cluster.kind === 'worker') return [cluster.fleet];
  const active = await activeFleets(app, run.project_id);
  const fleets = cluster.kind === 'master' ? active.filter(isClusterFleet) : active;
  if (configuration.fleets?.length)
    return fleets.filter((fleet) => configuration.fleets?.includes(fleet.name));
  return fleets;
}

/** What became of a job offered the fleet instances it fits on. */
type FleetPlacement =
  /** Placed on one: its blocks are taken and the job released `provisioning`, in one step. */
  | 'placed'
  /** Another server took the job over meanwhile: nothing was written. */
  | 'lost'
  /** A fitting one was locked (being checked) or taken meanwhile: try again shortly. */
  | 'busy'
  /** None fits. */
  | 'none'
  /** Those it fits, a waiting job of a higher-priority run fits too: it goes first (run-priority.ts). */
  | { behind: JobAhead };

/**
 * Places the job on the fleet instance it fits best: the fewest blocks that satisfy it of an idle
 * instance, or of a busy one split into blocks with some still free. The blocks are taken and
 * the job is released `provisioning` in one transaction: a job whose claim was taken over
 * (another server has it) takes no blocks, and an instance never counts a job that is not on it.
 */
async function placeOnFleetInstance(
  app: AppContext,
  job: JobsTable,
  lock: RowLock<'jobs'>,
  jobSpec: JobSpec,
  fleets: readonly FleetsTable[],
  configuration: RunConfiguration,
  cluster: ClusterJobPlacement,
  ahead: readonly JobAhead[],
): Promise<FleetPlacement> {
  const fitting = await fittingFleetInstances(
    app,
    job.project_id,
    fleets.map((fleet) => fleet.id),
    configuration,
    jobSpec.requirements,
  );
  const location = cluster.kind === 'worker' ? cluster.location : null;
  const atLocation = location
    ? fitting.filter(({ instance }) => instanceAtClusterLocation(instance, location))
    : fitting;
  let behind: JobAhead | undefined;
  const candidates: FittingInstance[] = [];
  for (const candidate of atLocation) {
    const sharesHost = ahead.length > 0 && (await sharesServerHost(app, candidate.instance.backend ?? ''));
    const first = aheadForInstance(ahead, candidate.instance, sharesHost);
    behind ??= first;
    if (first === undefined) candidates.push(candidate);
  }
  for (const { instance, share } of candidates) {
    const takeBlocks = async (transaction: Transaction<Database>) => {
      const now = Date.now();
      const taken = await transaction
        .updateTable('instances')
        .set({ status: 'busy', busy_blocks: sql`busy_blocks + ${share.blocks}`, idle_since: null })
        .where('id', '=', instance.id)
        .where('status', 'in', ['idle', 'busy'])
        .where('deleted', '=', 0)
        .where(sql<boolean>`busy_blocks + ${share.blocks} <= total_blocks`)
        .where(sql<boolean>`(lock_expires_at IS NULL OR lock_expires_at < ${now})`)
        .returning(['status', 'busy_blocks', 'total_blocks'])
        .executeTakeFirst();
      if (!taken) return false;
      await recordStatusChange(transaction, app.settings, 'instances', instance, { status: 'busy' });
      await recordEvent(transaction, app.settings, {
        message: `Job assigned to instance. Instance blocks: ${taken.busy_blocks}/${taken.total_blocks} busy`,
        actor: SYSTEM_ACTOR,
        targets: [eventTargets.job(job), eventTargets.instance(instance)],
      });
      return true;
    };
    const outcome = await lock.releaseWith(takeBlocks, {
      status: 'provisioning',
      instance_id: instance.id,
      instance_assigned: 1,
      job_provisioning_data: instance.job_provisioning_data,
      job_runtime_data: jobRuntimeDataColumn.encode(runtimeDataForShare(share)),
      last_processed_at: 0,
    });
    if (outcome === 'released') return 'placed';
    if (outcome === 'lost') return 'lost';
  }
  if (candidates.length > 0) return 'busy';
  return behind ? { behind } : 'none';
}

/** Offers for new capacity: those to launch on now, and those whose capacity is busy now. */
interface CapacityOffers {
  available: BackendOffer[];
  /**
   * Offers that exist but whose capacity the backend's own instances hold now (the local host):
   * it frees as their jobs end.
   */
  busy: BackendOffer[];
}

function byAvailability(entries: readonly BackendOffer[]): CapacityOffers {
  return {
    available: entries.filter((entry) => isAvailable(entry.offer.availability)),
    busy: entries.filter((entry) => entry.offer.availability === 'busy'),
  };
}

/** Offers for one instance of `fleet` for the job; the fleet's own backend and region limits apply. */
async function fleetOffersForJob(
  fleet: FleetsTable,
  backends: readonly ProjectBackend[],
  configuration: RunConfiguration,
  jobSpec: JobSpec,
): Promise<CapacityOffers> {
  const runFilters = offerFiltersOf(configuration);
  const fleetConfiguration = fleetConfigurationOf(fleet);
  const fleetBackends = fleetConfiguration.backends;
  const allowed = backends.filter(
    (backend) => !fleetBackends?.length || fleetBackends.includes(backend.type),
  );
  const blocks = fleetConfiguration.blocks;
  // A fleet split into blocks may launch an instance larger than the job: its share must fit.
  const requirements =
    blocks === 1 ? jobSpec.requirements : requirementsForSplitInstance(jobSpec.requirements);
  const { offers } = await getOffers(allowed, requirements, {
    ...runFilters,
    regions: runFilters.regions ?? fleetConfiguration.regions,
    instanceTypes: runFilters.instanceTypes ?? fleetConfiguration.instance_types,
    availabilityZones: runFilters.availabilityZones ?? fleetConfiguration.availability_zones,
  });
  return byAvailability(offersWithFittingShare(shareableOffers(offers, blocks), jobSpec.requirements));
}

/** Where a cluster fleet's master is, or null (not a cluster, or no instance launched yet). */
async function clusterFleetLocation(app: AppContext, fleet: FleetsTable): Promise<ClusterLocation | null> {
  if (!isClusterFleet(fleet)) return null;
  const master = await clusterMasterInstance(app, fleet.id);
  return master ? clusterLocationOf(master) : null;
}

/**
 * Available offers of the first fleet that can grow and has any; the fleet's own backend and
 * region limits apply. With none available, the busy offers found on the way.
 */
async function offersForNewCapacity(
  app: AppContext,
  fleets: readonly FleetsTable[],
  backends: readonly ProjectBackend[],
  run: RunsTable,
  configuration: RunConfiguration,
  jobSpec: JobSpec,
  cluster: ClusterJobPlacement,
): Promise<{ fleet: FleetsTable | null; offers: BackendOffer[]; busy: BackendOffer[] }> {
  const busy: BackendOffer[] = [];
  const location = cluster.kind === 'worker' ? cluster.location : null;
  for (const fleet of fleets) {
    const fleetConfiguration = fleetConfigurationOf(fleet);
    // An SSH fleet is its hosts: it never grows by new cloud or local instances.
    if (fleetConfiguration.ssh_config !== undefined) continue;
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
    const all = await fleetOffersForJob(fleet, backends, configuration, jobSpec);
    // Any job's new instance in a cluster fleet joins it where its master is (one zone, its group).
    const fleetLocation = location ?? (await clusterFleetLocation(app, fleet));
    const found = fleetLocation
      ? {
          available: offersAtClusterLocation(all.available, fleetLocation),
          busy: offersAtClusterLocation(all.busy, fleetLocation),
        }
      : all;
    if (found.available.length > 0) return { fleet, offers: found.available, busy: [] };
    busy.push(...found.busy);
  }
  if (fleets.length === 0 && cluster.kind !== 'worker') {
    const { offers } = await getOffers(backends, jobSpec.requirements, offerFiltersOf(configuration), {
      deadlineMs: app.settings.offersDeadlineMs,
    });
    const found = byAvailability(offers);
    if (found.available.length > 0) {
      const fleet = await createRunFleet(app, run.project_id, run.run_name, cluster.kind === 'master');
      return { fleet, offers: found.available, busy: [] };
    }
    busy.push(...found.busy);
  }
  return { fleet: null, offers: [], busy };
}

async function provision(
  context: JobPassContext,
  fleets: readonly FleetsTable[],
  volumePlacement: JobVolumePlacement,
  cluster: ClusterJobPlacement,
  ahead: readonly JobAhead[],
): Promise<void> {
  const { app, job, lock, run, project } = context;
  const { configuration } = volumePlacement;
  const jobSpec = jobSpecOf(job);
  const backends = await app.backends.getProjectBackends(project.id);
  const { fleet, offers, busy } = await offersForNewCapacity(
    app,
    fleets,
    backends,
    run,
    configuration,
    jobSpec,
    cluster,
  );
  // Capacity a waiting job of a higher-priority run would take is left to it (run-priority.ts).
  const behind = offers
    .map((entry) => aheadForOffer(ahead, entry.offer, entry.backend.plugin.runsOnServerHost === true))
    .find((first) => first !== undefined);
  if (behind) {
    await waitBehind(context, behind);
    return;
  }
  if ((!fleet || offers.length === 0) && busy.length > 0) {
    // Nothing to launch now: no instance row is written, the job waits or fails as it is.
    await waitOrFailForBusyCapacity(context, busy);
    return;
  }
  if (!fleet || offers.length === 0) {
    const exclusions = await explainNoOffers(backends, jobSpec.requirements, offerFiltersOf(configuration));
    const details = exclusions.map((entry) =>
      entry.excluded > 0 ? `${entry.requirement} excluded ${entry.excluded} offer(s)` : entry.requirement,
    );
    const noFleet = fleets.length === 0 && configuration.fleets?.length ? 'no matching fleet found; ' : '';
    await failJob(
      context,
      'failed_to_start_due_to_no_capacity',
      `${noFleet}no offers match the requirements${details.length ? `: ${details.join('; ')}` : ''}`,
    );
    return;
  }
  const fleetConfiguration = fleetConfigurationOf(fleet);
  // The placeholder is written before any cloud call, so every machine we create is tracked.
  const instance = await insertPendingInstance(
    app,
    {
      projectId: project.id,
      fleet,
      requirements: jobSpec.requirements,
      terminationIdleTime: idleSeconds(configuration, fleetConfiguration),
      busyBlocks: 1,
      job,
    },
    fleetConfiguration.nodes?.max ?? null,
  );
  if (instance === null) {
    // Another job took the fleet's last place meanwhile: the next pass looks for capacity again.
    await lock.release({ last_processed_at: dueIn(100, MIN_INTERVAL_MS) });
    return;
  }
  // Recorded on the job before the backend is called: a retry after a crash launches this
  // same instance (same idempotency key) instead of a second one.
  const recorded = await app.db
    .updateTable('jobs')
    .set({ instance_id: instance.id })
    .where('id', '=', job.id)
    .where('lock_token', '=', lock.token)
    .executeTakeFirst();
  if (Number(recorded.numUpdatedRows) !== 1) {
    // Another server took the job over: nothing was launched for this row.
    await app.db
      .deleteFrom('instances')
      .where('id', '=', instance.id)
      .where('status', '=', 'pending')
      .execute();
    return;
  }
  await launchJobInstance(context, instance, offers, fleet, volumePlacement);
}

/**
 * Launches the job's pending instance on the first offer that works, with the instance's id as
 * the idempotency key, and moves the job to `provisioning` (or fails it when every offer failed).
 */
async function launchJobInstance(
  context: JobPassContext,
  instance: InstancesTable,
  offers: readonly BackendOffer[],
  fleet: FleetsTable | null,
  volumePlacement: JobVolumePlacement,
): Promise<void> {
  const { app, job, lock, run, project } = context;
  const volumes: Volume[] = await launchVolumesOf(app, volumePlacement.resolved);
  const paramsFor = await runJobParamsOf(app, { run, job, project, instanceId: instance.id, volumes });
  const { requirements } = jobSpecOf(job);
  // In a cluster fleet the first instance makes its placement group, the others launch into it.
  const placement = fleet ? await clusterPlacementOf(app, project, fleet, instance) : null;
  let group: PlacementGroup | null = null;
  const result = await launchOnFirstOffer(
    app,
    instance,
    offers,
    async (entry) => {
      group = fleet && placement ? await launchPlacementGroup(app, project, fleet, placement, entry) : null;
      return entry.backend.compute.runJob({ ...paramsFor(entry.offer), placementGroup: group });
    },
    (offer) => shareOfNewInstance(offer, requirements).blocks,
  );
  if (fleet && placement?.isMaster && isClusterFleet(fleet)) {
    await retireOtherPlacementGroups(app, fleet.id, result.launched ? group : null);
  }
  if (result.launched) {
    // Not due yet: the instance pipeline makes the job due once the instance is up (or gone).
    await lock.release({
      status: 'provisioning',
      instance_id: instance.id,
      instance_assigned: 1,
      job_provisioning_data: jobProvisioningDataColumn.encode(result.provisioningData),
      job_runtime_data: jobRuntimeDataColumn.encode(
        runtimeDataForShare(shareOfNewInstance(result.offer.offer, requirements)),
      ),
    });
    app.wakeUps.wake('instances');
    await markRunDue(app, job.run_id);
    if (requirements.multinode && job.job_num === 0) await markClusterWorkersDue(app, job);
    return;
  }
  const capacityRetry = result.capacityRetry;
  if (capacityRetry !== null) {
    // Idle instances the job did not fit may be what holds the host: one goes, and the job waits for its room.
    const roomComing = await makeRoomOnHost(app, job, capacityRetry.backends);
    if (roomComing || waitsForCapacity(job)) {
      await waitForCapacity(context, capacityRetry.afterMs);
      await removeFailedPlaceholder(app, instance.id);
      return;
    }
  }
  const message = result.givenUp
    ? `instance ${instance.id} was given up during its launch`
    : describeLaunchFailures(result.failures);
  await failJob(context, launchFailureReason(result.failures), message);
  await removeFailedPlaceholder(app, instance.id);
}

/** How soon a job waiting for capacity that frees by itself (the local host) looks again. */
const BUSY_CAPACITY_RETRY_MS = 1_000;

/** Leaves the job waiting while a job of a higher-priority run takes the capacity it fits (run-priority.ts). */
async function waitBehind(context: JobPassContext, ahead: JobAhead): Promise<void> {
  await recordWaitForPriority(context.app, context.job, ahead);
  await waitForCapacity(context, BUSY_CAPACITY_RETRY_MS);
}

/**
 * The job's matching offers are all `busy` (the local host, held by its own instances): idle
 * instances it does not fit are made to go, and it waits for the room when that is on its way
 * or its `retry` covers `no-capacity`; else it fails `failed_to_start_due_to_no_capacity`, as
 * dstack's job with no capacity and no retry does.
 */
async function waitOrFailForBusyCapacity(
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
 * The reason of a job whose launch failed on every offer: `failed_to_start_due_to_no_capacity`
 * when only capacity was missing, as in dstack. A refused key, throttling or another backend
 * error is not a lack of capacity (a `retry` on `no-capacity` would wait for nothing): dstack
 * has no reason of its own for it, so the job ends `executor_error`, which fails it (retried
 * on `error`), and its message says which backend failed how.
 */
function launchFailureReason(failures: readonly LaunchFailure[]): JobTerminationReason {
  return failedForCapacityOnly(failures) ? 'failed_to_start_due_to_no_capacity' : 'executor_error';
}

/**
 * Whether the job waits in `submitted` for capacity that a backend said frees by itself (the
 * local host, as its instances' jobs end), rather than failing and being resubmitted after
 * dstack's backoff: its `retry` covers `no-capacity`, for `retry.duration` from its submission.
 * Without such a `retry` it fails, as dstack's jobs do.
 */
function waitsForCapacity(job: JobsTable): boolean {
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
async function makeRoomOnHost(
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
        .where(sql<boolean>`(lock_expires_at IS NULL OR lock_expires_at < ${now})`)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) return false;
      await recordStatusChange(transaction, app.settings, 'instances', instance, update);
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
 * Leaves the job `submitted`, due again after `retryAfterMs`, when it looks for an idle instance
 * first again (the one a finished job freed), then for new capacity.
 */
async function waitForCapacity(
  context: Pick<JobPassContext, 'app' | 'lock'>,
  retryAfterMs: number,
): Promise<void> {
  await context.lock.release({ instance_id: null, last_processed_at: dueIn(retryAfterMs, MIN_INTERVAL_MS) });
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

/**
 * Removes the placeholder of a job's launch that failed on every offer: nothing was launched
 * for it (`launchOnFirstOffer` ended it `terminated(no_offers)`) and the job no longer names
 * it, so it would only pile up, one per attempt. dstack writes a job's instance only once it
 * is launched.
 */
async function removeFailedPlaceholder(app: AppContext, placeholderId: string): Promise<void> {
  await app.db
    .deleteFrom('instances')
    .where('id', '=', placeholderId)
    .where('status', '=', 'terminated')
    .where('termination_reason', '=', 'no_offers')
    .execute();
}

/**
 * The job has an instance recorded but not assigned: a server claimed it, recorded its pending
 * instance and stopped (it died, or lost its claim) before storing the outcome. A `pending`
 * instance is launched again with the same id, so the backend returns the machine the first
 * launch started, if any; an instance whose launch was stored is assigned. Returns false when
 * the recorded instance is gone, and the job needs new capacity.
 */
async function resumeRecordedLaunch(
  context: JobPassContext,
  instanceId: string,
  volumePlacement: JobVolumePlacement,
): Promise<boolean> {
  const { app, job, lock, project } = context;
  const instance = await app.db
    .selectFrom('instances')
    .selectAll()
    .where('id', '=', instanceId)
    .executeTakeFirst();
  if (!instance || instance.deleted === 1 || ['terminating', 'terminated'].includes(instance.status)) {
    return false;
  }
  if (instance.status === 'pending') {
    const fleet = await app.db
      .selectFrom('fleets')
      .selectAll()
      .where('id', '=', instance.fleet_id)
      .executeTakeFirst();
    const backends = await app.backends.getProjectBackends(project.id);
    // Busy offers too: the recorded one may be held by this very launch's instance (the local
    // host), and a launch repeated with its id returns that instance.
    const found = fleet
      ? await fleetOffersForJob(fleet, backends, volumePlacement.configuration, jobSpecOf(job))
      : null;
    await launchJobInstance(
      context,
      instance,
      found ? [...found.available, ...found.busy] : [],
      fleet ?? null,
      volumePlacement,
    );
    return true;
  }
  // The launch was stored on the instance, not on the job: the job takes it as a new launch would
  // (the blocks it holds were counted when the launch was stored).
  const alreadyUp = instance.status !== 'provisioning';
  const share = shareOfLaunchedInstance(instance, jobSpecOf(job).requirements);
  await lock.release({
    status: 'provisioning',
    instance_id: instance.id,
    instance_assigned: 1,
    job_provisioning_data: instance.job_provisioning_data,
    job_runtime_data: share ? jobRuntimeDataColumn.encode(runtimeDataForShare(share)) : null,
    ...(alreadyUp ? { last_processed_at: 0 } : {}),
  });
  app.wakeUps.wake(alreadyUp ? 'jobs-running' : 'instances');
  await markRunDue(app, job.run_id);
  return true;
}

export function jobSubmittedPipeline(app: AppContext): PipelineDefinition<'jobs'> {
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
      const context: JobPassContext = { app, job, lock, run, project };
      const volumePlacement = await volumePlacementOrFail(context);
      if (!volumePlacement) return;
      if (job.instance_id !== null && job.instance_assigned === 0) {
        if (await resumeRecordedLaunch(context, job.instance_id, volumePlacement)) return;
      }
      // The run's configuration, narrowed to where the job's volumes are.
      const { configuration } = volumePlacement;
      const jobSpec = jobSpecOf(job);
      const cluster = await clusterJobPlacement(app, job, jobSpec);
      if (cluster.kind === 'wait') {
        // The master is placed first; its launch makes this worker due (markClusterWorkersDue).
        await lock.release({ last_processed_at: dueIn(CLUSTER_WAIT_MS, MIN_INTERVAL_MS) });
        return;
      }
      const fleets = await candidateFleets(app, run, configuration, cluster);
      // A cluster's worker follows its master, whatever waits: the nodes start together.
      const ahead = cluster.kind === 'worker' ? [] : await jobsAhead(app, job, run);
      const placement = await placeOnFleetInstance(
        app,
        job,
        lock,
        jobSpec,
        fleets,
        configuration,
        cluster,
        ahead,
      );
      if (placement === 'lost') return;
      if (typeof placement === 'object') {
        await waitBehind(context, placement.behind);
        return;
      }
      if (placement === 'placed') {
        app.wakeUps.wake('jobs-running');
        await markRunDue(app, job.run_id);
        if (cluster.kind === 'master') await markClusterWorkersDue(app, job);
        return;
      }
      // A fitting idle instance is being checked by its pipeline: try it again shortly rather than buy another.
      if (placement === 'busy') {
        await lock.release({ last_processed_at: dueIn(100, MIN_INTERVAL_MS) });
        return;
      }
      if (configuration.creation_policy === 'reuse') {
        await failJob(
          context,
          'failed_to_start_due_to_no_capacity',
          'no idle instance fits the run and creation_policy is reuse',
        );
        return;
      }
      await provision(context, fleets, volumePlacement, cluster, ahead);
    },
  };
}

/**
 * Where the job may run given its volumes (`run-volumes.ts`); null when it cannot have them (gone,
 * not active, attached to another instance, mountable nowhere): the job then ends `volume_error`
 * before any capacity is bought for it, as dstack's does.
 */
async function volumePlacementOrFail(context: JobPassContext): Promise<JobVolumePlacement | null> {
  const { app, job, run, project } = context;
  const backends = await app.backends.getProjectBackends(project.id);
  try {
    const configuration = runSpecOf(run).configuration;
    const placement = await jobVolumePlacement(app, project.id, configuration, jobSpecOf(job), backends);
    const held = await volumesHeldElsewhere(app, placement.resolved, backends);
    if (held) throw new JobVolumeError(held);
    return placement;
  } catch (error) {
    if (!(error instanceof JobVolumeError)) throw error;
    await failJob(context, 'volume_error', error.message);
    return null;
  }
}
