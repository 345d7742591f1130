/**
 * Instances: poll a provisioning instance until its shim answers, terminate
 * idle ones after their idle time or once their provider says they are gone,
 * and terminate (retrying) those asked to.
 * Termination is what guarantees no machine is left behind: it is retried
 * every 30 s for up to 15 minutes, as in dstack. A pending instance whose
 * owner is gone is given up, and one terminating whose launch result was never
 * stored is launched again with the same id to find the machine it ends.
 */
import {
  type Compute,
  FINISHED_JOB_STATUSES,
  type InstanceTerminationReason,
  type JobProvisioningData,
  NotYetTerminatedError,
  ProvisioningError,
} from '@dstack/core';
import { sql } from 'kysely';
import { projectOf } from '../accounts/projects.js';
import { shimClientFor } from '../agents/agent-clients.js';
import { bootstrapFailureOf } from '../agents/bootstrap-log.js';
import { remoteConnectionOf, sshHostAddressOf } from '../agents/remote-connection.js';
import { stopDeployedShim } from '../agents/ssh-host-deploy.js';
import type { AppContext } from '../context.js';
import { instanceProvisioningDataColumn, instanceProvisioningDataOf } from '../db/json-columns.js';
import type { InstancesTable, ProjectsTable } from '../db/schema.js';
import { errorMessage } from '../error-message.js';
import type { PipelineDefinition, RowLock } from '../pipelines/pipeline.js';
import { dueIn } from '../pipelines/pipeline.js';
import { fleetKeepsInstance } from './fleet-rows.js';
import { abandonPendingInstance, relaunchStrandedInstance } from './instance-launch.js';
import { INSTANCE_PASS_INTERVAL_MS, markInstanceJobsDue } from './instance-rows.js';

const MIN_INTERVAL_MS = INSTANCE_PASS_INTERVAL_MS;
const PROVISIONING_POLL_MS = 200;
const TERMINATION_RETRY_MS = 30_000;
const TERMINATION_RETRY_LIMIT_MS = 15 * 60_000;
/** How often the bootstrap log of an instance whose shim does not answer yet is read over SSH. */
const BOOTSTRAP_LOG_CHECK_MS = 10_000;
/** An idle instance whose shim does not answer this long is terminated (dstack: 20 minutes). */
const UNREACHABLE_LIMIT_MS = 20 * 60_000;
/**
 * A pending row younger than this is left to its owner: longer than a claim lasts (30 s), so
 * that a launch whose owner is between inserting the row and recording it is never taken.
 */
const PENDING_OWNER_GRACE_MS = 60_000;
/** How often a pending row is looked at (its owner launches it; this only finds strays). */
const PENDING_CHECK_MS = 30_000;

function computeOf(app: AppContext, instance: InstancesTable): Promise<Compute | null> {
  return app.backends.computeOf(instance.project_id, instance.backend);
}

function startTerminating(
  lock: RowLock<'instances'>,
  reason: InstanceTerminationReason,
  message: string | null,
): Promise<boolean> {
  return lock.release({
    status: 'terminating',
    termination_reason: reason,
    termination_reason_message: message,
    last_processed_at: 0,
  });
}

async function shimAnswers(
  app: AppContext,
  project: ProjectsTable,
  instance: InstancesTable,
): Promise<boolean> {
  const provisioningData = instanceProvisioningDataOf(instance);
  if (!provisioningData?.hostname) return false;
  if (!provisioningData.dockerized) return true;
  try {
    const shim = await shimClientFor(app, project, provisioningData, instance.id);
    await shim.healthcheck();
    return true;
  } catch {
    return false;
  }
}

async function processProvisioning(
  app: AppContext,
  instance: InstancesTable,
  lock: RowLock<'instances'>,
): Promise<void> {
  if (instance.provisioning_deadline !== null && Date.now() > instance.provisioning_deadline) {
    app.caches.fleets.bootstrapLogChecks.delete(instance.id);
    await startTerminating(
      lock,
      'provisioning_timeout',
      'the instance did not come up before the provisioning timeout',
    );
    await markInstanceJobsDue(app, instance.id);
    return;
  }
  let provisioningData = instanceProvisioningDataOf(instance);
  const compute = await computeOf(app, instance);
  if (!provisioningData || !compute) {
    await startTerminating(
      lock,
      'error',
      compute ? 'no provisioning data' : `backend ${instance.backend} is not configured`,
    );
    return;
  }
  const project = await projectOf(app, instance.project_id);
  if (!provisioningData.hostname) {
    try {
      provisioningData = await compute.updateProvisioningData(provisioningData, {
        publicKey: project.ssh_public_key,
        privateKey: app.encryption.decrypt(project.ssh_private_key),
      });
    } catch (error) {
      if (ProvisioningError.isInstance(error)) {
        await startTerminating(lock, 'error', errorMessage(error));
        await markInstanceJobsDue(app, instance.id);
        return;
      }
      throw error;
    }
  }
  const updated = {
    ...instance,
    job_provisioning_data: instanceProvisioningDataColumn.encode(provisioningData),
  };
  if (provisioningData.hostname && (await shimAnswers(app, project, updated))) {
    app.caches.fleets.bootstrapLogChecks.delete(instance.id);
    // Decided on the row as it is now: a job that stopped during this pass freed its blocks
    // without the claim, and an instance left busy with no job would never time out idle.
    const idle = sql<boolean>`busy_blocks = 0`;
    await lock.release({
      job_provisioning_data: updated.job_provisioning_data,
      status: sql`CASE WHEN ${idle} THEN 'idle' ELSE 'busy' END`,
      idle_since: sql`CASE WHEN ${idle} THEN CAST(${Date.now()} AS BIGINT) ELSE NULL END`,
    });
    await markInstanceJobsDue(app, instance.id);
    // An instance that came up with free blocks (a fleet's, or one split into blocks) may take a waiting job.
    if (instance.busy_blocks < instance.total_blocks) app.wakeUps.wake('jobs-submitted');
    return;
  }
  const failure = await bootstrapFailureToReport(app, project, updated, provisioningData);
  if (failure !== null) {
    await startTerminating(lock, 'error', failure);
    await markInstanceJobsDue(app, instance.id);
    return;
  }
  await lock.release({
    job_provisioning_data: updated.job_provisioning_data,
    last_processed_at: dueIn(PROVISIONING_POLL_MS, MIN_INTERVAL_MS),
  });
}

/**
 * The failure a cloud VM's bootstrap recorded in its log (`bootstrapFailureOf`), for an instance
 * that is up but whose shim does not answer: read over SSH at most every
 * `BOOTSTRAP_LOG_CHECK_MS` per instance, since the provisioning poll is much faster.
 */
async function bootstrapFailureToReport(
  app: AppContext,
  project: ProjectsTable,
  instance: InstancesTable,
  provisioningData: JobProvisioningData,
): Promise<string | null> {
  // SSH fleet hosts are deployed over SSH, which reports its own failures; containers have no shim.
  if (!provisioningData.hostname || !provisioningData.dockerized || instance.remote_connection_info) {
    return null;
  }
  const now = Date.now();
  const checks = app.caches.fleets.bootstrapLogChecks;
  const last = checks.get(instance.id);
  if (last !== undefined && now - last < BOOTSTRAP_LOG_CHECK_MS) return null;
  checks.set(instance.id, now);
  const failure = await bootstrapFailureOf(provisioningData, app.encryption.decrypt(project.ssh_private_key));
  if (failure !== null) app.caches.fleets.bootstrapLogChecks.delete(instance.id);
  return failure;
}

async function processIdleOrBusy(
  app: AppContext,
  instance: InstancesTable,
  lock: RowLock<'instances'>,
): Promise<void> {
  const now = Date.now();
  if (
    instance.status === 'idle' &&
    instance.termination_idle_time !== null &&
    instance.idle_since !== null &&
    now - instance.idle_since > instance.termination_idle_time * 1000 &&
    !(await fleetKeepsInstance(app, instance))
  ) {
    await startTerminating(lock, 'idle_timeout', `idle for more than ${instance.termination_idle_time}s`);
    app.wakeUps.wake('instances');
    return;
  }
  const project = await projectOf(app, instance.project_id);
  if (await shimAnswers(app, project, instance)) {
    await lock.release({ unreachable: 0, termination_deadline: null });
    return;
  }
  if (instance.status === 'idle' && (await endedAtProvider(app, instance, lock))) return;
  const deadline = instance.termination_deadline ?? now + UNREACHABLE_LIMIT_MS;
  // An SSH fleet host belongs to the user: it stays in the fleet, marked unreachable, until it answers again.
  if (instance.status === 'idle' && now > deadline && !instance.remote_connection_info) {
    await startTerminating(lock, 'unreachable', 'the instance did not answer for 20 minutes');
    return;
  }
  await lock.release({ unreachable: 1, termination_deadline: deadline });
}

/**
 * An idle instance whose shim does not answer is asked about at its provider (backends with
 * `instanceStatus`): one the cloud took back (a spot interruption) or that was terminated outside
 * dstack is terminated in this pass, with dstack's `unreachable` reason and a message saying why,
 * instead of showing `idle` until the unreachable limit. Its machine is still terminated at the
 * provider (a preempted GCP VM stays as a stopped resource); when that fails, the terminating pass
 * retries it. A busy instance is left to its job, which the job pipeline ends the same way (as
 * `interrupted_by_no_capacity`, for `retry`), after which the instance is idle. A provider that
 * does not answer leaves the instance to the unreachable limit. Returns whether it was terminated.
 */
async function endedAtProvider(
  app: AppContext,
  instance: InstancesTable,
  lock: RowLock<'instances'>,
): Promise<boolean> {
  const provisioningData = instanceProvisioningDataOf(instance);
  if (!provisioningData || instance.remote_connection_info) return false;
  const compute = await computeOf(app, instance);
  if (!compute?.instanceStatus) return false;
  const status = await compute.instanceStatus(provisioningData).catch(() => 'running' as const);
  if (status === 'running') return false;
  const message =
    status === 'interrupted'
      ? 'the provider took the spot instance back'
      : 'the instance was terminated outside dstack';
  try {
    await compute.terminateInstance(
      provisioningData.instance_id,
      provisioningData.region,
      provisioningData.backend_data,
    );
  } catch {
    await startTerminating(lock, 'unreachable', message);
    app.wakeUps.wake('instances');
    return true;
  }
  await lock.release({
    status: 'terminated',
    termination_reason: 'unreachable',
    termination_reason_message: message,
    deleted: 1,
    finished_at: Date.now(),
  });
  app.wakeUps.wake('fleets');
  return true;
}

/**
 * Lets go of an SSH fleet host: stops the shim the deploy started (by its recorded pid) and
 * removes its home, logging in as the deploy did (through the host's proxy, if any). The host
 * itself is never terminated.
 */
async function releaseSshHost(app: AppContext, instance: InstancesTable): Promise<void> {
  const connection = remoteConnectionOf(app, instance);
  if (connection === null) return;
  await stopDeployedShim(sshHostAddressOf(connection), {
    home: connection.shim_home,
    pid: connection.shim_pid,
  });
}

/**
 * The machine of a launch whose result was never stored (an offer is recorded, no provisioning
 * data): launched again with the same id, the backend hands it back. Stored at once, so that
 * a termination retried later needs no second launch.
 */
async function learnStrandedMachine(
  app: AppContext,
  instance: InstancesTable,
  compute: Compute,
  lock: RowLock<'instances'>,
): Promise<JobProvisioningData> {
  const machine = await relaunchStrandedInstance(app, instance, compute);
  await app.db
    .updateTable('instances')
    .set({ job_provisioning_data: instanceProvisioningDataColumn.encode(machine) })
    .where('id', '=', instance.id)
    .where('lock_token', '=', lock.token)
    .execute();
  return machine;
}

/**
 * Whether the owner of a pending instance may still launch it: a job that is not finished (a
 * submitted one resumes the launch, a terminating one gives it up itself), or, for a fleet's
 * own instance, a fleet not yet terminated (its pipeline launches or terminates the row).
 */
async function ownerNeedsPendingInstance(app: AppContext, instance: InstancesTable): Promise<boolean> {
  const job = await app.db
    .selectFrom('jobs')
    .select('id')
    .where('instance_id', '=', instance.id)
    .where('status', 'not in', [...FINISHED_JOB_STATUSES])
    .executeTakeFirst();
  if (job) return true;
  // Made for a job (busy from the start): no job is left to launch it.
  if (instance.busy_blocks > 0 || !instance.fleet_id) return false;
  const fleet = await app.db
    .selectFrom('fleets')
    .select(['status', 'deleted'])
    .where('id', '=', instance.fleet_id)
    .executeTakeFirst();
  return fleet !== undefined && fleet.deleted === 0 && fleet.status !== 'terminated';
}

/**
 * A `pending` row is launched by its owner (the job's or the fleet's pipeline, under the
 * owner's claim). One left behind, older than a claim and wanted by no owner, is given up:
 * terminated when no offer was recorded, else `terminating`, to end the machine it may have.
 */
async function processPending(
  app: AppContext,
  instance: InstancesTable,
  lock: RowLock<'instances'>,
): Promise<void> {
  const stranded =
    Date.now() - instance.created_at > PENDING_OWNER_GRACE_MS &&
    !(await ownerNeedsPendingInstance(app, instance));
  if (!stranded) {
    await lock.release({ last_processed_at: dueIn(PENDING_CHECK_MS, MIN_INTERVAL_MS) });
    return;
  }
  const reason = instance.busy_blocks > 0 ? 'job_finished' : 'terminated_by_user';
  const outcome = await abandonPendingInstance(
    app,
    instance.id,
    reason,
    'nobody will complete its launch any more',
  );
  await lock.release(outcome === 'terminating' ? { last_processed_at: 0 } : {});
  if (outcome === 'terminated') app.wakeUps.wake('fleets');
}

async function processTerminating(
  app: AppContext,
  instance: InstancesTable,
  lock: RowLock<'instances'>,
): Promise<void> {
  const provisioningData = instanceProvisioningDataOf(instance);
  const now = Date.now();
  if (instance.remote_connection_info) {
    const firstTry = instance.first_termination_retry_at ?? now;
    try {
      await releaseSshHost(app, instance);
    } catch (error) {
      if (now - firstTry < TERMINATION_RETRY_LIMIT_MS) {
        console.error(
          `[instances] stopping the shim of ${instance.name} failed, retrying: ${errorMessage(error)}`,
        );
        await lock.release({
          first_termination_retry_at: firstTry,
          last_termination_retry_at: now,
          last_processed_at: dueIn(TERMINATION_RETRY_MS, MIN_INTERVAL_MS),
        });
        return;
      }
      console.error(`[instances] giving up stopping the shim of ${instance.name}: ${errorMessage(error)}`);
    }
  } else if (provisioningData || instance.offer !== null) {
    const compute = await computeOf(app, instance);
    const firstTry = instance.first_termination_retry_at ?? now;
    try {
      if (!compute) throw new Error(`backend ${instance.backend} is not configured`);
      const machine = provisioningData ?? (await learnStrandedMachine(app, instance, compute, lock));
      await compute.terminateInstance(machine.instance_id, machine.region, machine.backend_data);
    } catch (error) {
      if (now - firstTry < TERMINATION_RETRY_LIMIT_MS) {
        const retryIn = NotYetTerminatedError.isInstance(error) ? 2_000 : TERMINATION_RETRY_MS;
        if (!NotYetTerminatedError.isInstance(error)) {
          console.error(`[instances] terminating ${instance.name} failed, retrying: ${errorMessage(error)}`);
        }
        await lock.release({
          first_termination_retry_at: firstTry,
          last_termination_retry_at: now,
          last_processed_at: dueIn(retryIn, MIN_INTERVAL_MS),
        });
        return;
      }
      console.error(
        `[instances] giving up terminating ${instance.name} after 15 minutes: ${errorMessage(error)}`,
      );
    }
  }
  await lock.release({ status: 'terminated', deleted: 1, finished_at: now });
  // A terminated instance holds no volume: the provider detached them with it.
  await app.db.deleteFrom('volume_attachments').where('instance_id', '=', instance.id).execute();
  app.wakeUps.wake('fleets');
  await markInstanceJobsDue(app, instance.id);
}

export function instancePipeline(app: AppContext): PipelineDefinition<'instances'> {
  return {
    name: 'instances',
    table: 'instances',
    statuses: ['pending', 'provisioning', 'idle', 'busy', 'terminating'],
    minIntervalMs: MIN_INTERVAL_MS,
    // A pass mostly waits for a shim or a cloud API.
    workers: 50,
    async process(instance, lock) {
      if (instance.status === 'pending') await processPending(app, instance, lock);
      else if (instance.status === 'provisioning') await processProvisioning(app, instance, lock);
      else if (instance.status === 'terminating') await processTerminating(app, instance, lock);
      else await processIdleOrBusy(app, instance, lock);
    },
  };
}
