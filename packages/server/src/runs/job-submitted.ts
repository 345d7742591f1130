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
  DEFAULT_RUN_IDLE_DURATION,
  type FleetConfiguration,
  type JobTerminationReason,
  type PlacementGroup,
  type RunConfiguration,
  type Volume,
} from '@dstack/core';
import { projectOf } from '../accounts/projects.js';
import { type BackendOffer, explainNoOffers } from '../backends/offers.js';
import type { AppContext } from '../context.js';
import {
  fleetConfigurationOf,
  jobProvisioningDataColumn,
  jobRuntimeDataColumn,
  jobSpecOf,
  runSpecOf,
} from '../db/json-columns.js';
import type { FleetsTable, InstancesTable } from '../db/schema.js';
import { isClusterFleet } from '../fleets/cluster-fleets.js';
import {
  runtimeDataForShare,
  shareOfLaunchedInstance,
  shareOfNewInstance,
} from '../fleets/instance-blocks.js';
import {
  describeLaunchFailures,
  failedForCapacityOnly,
  insertPendingInstance,
  type LaunchFailure,
  launchOnFirstOffer,
} from '../fleets/instance-launch.js';
import { runJobParamsOf } from '../fleets/launch-parameters.js';
import {
  clusterPlacementOf,
  launchPlacementGroup,
  retireOtherPlacementGroups,
} from '../fleets/placement-groups.js';
import type { PipelineDefinition } from '../pipelines/pipeline.js';
import { dueIn } from '../pipelines/pipeline.js';
import { JobVolumeError, volumesHeldElsewhere } from '../volumes/job-volumes.js';
import { type ClusterJobPlacement, clusterJobPlacement, markClusterWorkersDue } from './cluster-jobs.js';
import {
  makeRoomOnHost,
  waitBehind,
  waitOrFailForBusyCapacity,
  waitsForCapacity,
} from './job-busy-capacity.js';
import { fleetOffersForJob, offersForNewCapacity } from './job-capacity-offers.js';
import { candidateFleets, placeOnFleetInstance } from './job-fleet-placement.js';
import { type JobPassContext, runRowOf } from './job-pass.js';
import {
  failJob,
  SUBMITTED_JOB_MIN_INTERVAL_MS as MIN_INTERVAL_MS,
  waitForCapacity,
} from './job-submitted-release.js';
import { runFollowsJob } from './run-follows-job.js';
import { offerFiltersOf } from './run-plan.js';
import { aheadForOffer, type JobAhead, jobsAhead } from './run-priority.js';
import { type JobVolumePlacement, jobVolumePlacement, launchVolumesOf } from './run-volumes.js';

/** How soon a worker of a cluster whose master has no instance yet looks again. */
const CLUSTER_WAIT_MS = 500;

function idleSeconds(run: RunConfiguration, fleet: FleetConfiguration): number | null {
  const value = run.idle_duration ?? fleet.idle_duration ?? DEFAULT_RUN_IDLE_DURATION;
  return value === 'off' ? null : value;
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
    const released = await lock.release({
      status: 'provisioning',
      instance_id: instance.id,
      instance_assigned: 1,
      job_provisioning_data: jobProvisioningDataColumn.encode(result.provisioningData),
      job_runtime_data: jobRuntimeDataColumn.encode(
        runtimeDataForShare(shareOfNewInstance(result.offer.offer, requirements)),
      ),
    });
    app.wakeUps.wake('instances');
    await runFollowsJob(app, context, 'provisioning', released);
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
  const released = await lock.release({
    status: 'provisioning',
    instance_id: instance.id,
    instance_assigned: 1,
    job_provisioning_data: instance.job_provisioning_data,
    job_runtime_data: share ? jobRuntimeDataColumn.encode(runtimeDataForShare(share)) : null,
    ...(alreadyUp ? { last_processed_at: 0 } : {}),
  });
  app.wakeUps.wake(alreadyUp ? 'jobs-running' : 'instances');
  await runFollowsJob(app, context, 'provisioning', released);
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
        await runFollowsJob(app, context, 'provisioning', true);
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
