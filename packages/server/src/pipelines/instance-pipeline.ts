/**
 * Instances: poll a provisioning instance until its shim answers, terminate
 * idle ones after their idle time, and terminate (retrying) those asked to.
 * Termination is what guarantees no machine is left behind: it is retried
 * every 30 s for up to 15 minutes, as in dstack.
 */
import { type Compute, NotYetTerminatedError, ProvisioningError } from '@dstack/core';
import type { AppContext } from '../context.js';
import type { InstancesTable, ProjectsTable } from '../db/schema.js';
import { runServicesOf } from '../run-services.js';
import { shimClientFor } from './agent-clients.js';
import type { PipelineDefinition, RowLock } from './pipeline.js';
import { dueIn, errorMessage, markInstanceJobsDue, projectOf, provisioningDataOf } from './rows.js';

const MIN_INTERVAL_MS = 10_000;
const PROVISIONING_POLL_MS = 200;
const TERMINATION_RETRY_MS = 30_000;
const TERMINATION_RETRY_LIMIT_MS = 15 * 60_000;
/** An idle instance whose shim does not answer this long is terminated (dstack: 20 minutes). */
const UNREACHABLE_LIMIT_MS = 20 * 60_000;

async function computeOf(app: AppContext, instance: InstancesTable): Promise<Compute | null> {
  const backends = await runServicesOf(app).backends.getProjectBackends(instance.project_id);
  return backends.find((backend) => backend.type === instance.backend)?.compute ?? null;
}

function startTerminating(lock: RowLock, reason: string, message: string | null): Promise<boolean> {
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
  const provisioningData = provisioningDataOf(instance);
  if (!provisioningData?.hostname) return false;
  if (!provisioningData.dockerized) return true;
  try {
    const shim = await shimClientFor(app, project, provisioningData);
    await shim.healthcheck();
    return true;
  } catch {
    return false;
  }
}

async function processProvisioning(app: AppContext, instance: InstancesTable, lock: RowLock): Promise<void> {
  if (instance.provisioning_deadline !== null && Date.now() > instance.provisioning_deadline) {
    await startTerminating(
      lock,
      'provisioning_timeout',
      'the instance did not come up before the provisioning timeout',
    );
    await markInstanceJobsDue(app, instance.id);
    return;
  }
  let provisioningData = provisioningDataOf(instance);
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
  const updated = { ...instance, job_provisioning_data: JSON.stringify(provisioningData) };
  if (provisioningData.hostname && (await shimAnswers(app, project, updated))) {
    const idle = instance.busy_blocks === 0;
    await lock.release({
      job_provisioning_data: updated.job_provisioning_data,
      status: idle ? 'idle' : 'busy',
      idle_since: idle ? Date.now() : null,
    });
    await markInstanceJobsDue(app, instance.id);
    runServicesOf(app).wakeUps.wake('jobs-submitted');
    return;
  }
  await lock.release({
    job_provisioning_data: updated.job_provisioning_data,
    last_processed_at: dueIn(PROVISIONING_POLL_MS, MIN_INTERVAL_MS),
  });
}

async function processIdleOrBusy(app: AppContext, instance: InstancesTable, lock: RowLock): Promise<void> {
  const now = Date.now();
  if (
    instance.status === 'idle' &&
    instance.termination_idle_time !== null &&
    instance.idle_since !== null &&
    now - instance.idle_since > instance.termination_idle_time * 1000
  ) {
    await startTerminating(lock, 'idle_timeout', `idle for more than ${instance.termination_idle_time}s`);
    runServicesOf(app).wakeUps.wake('instances');
    return;
  }
  const project = await projectOf(app, instance.project_id);
  if (await shimAnswers(app, project, instance)) {
    await lock.release({ unreachable: 0, termination_deadline: null });
    return;
  }
  const deadline = instance.termination_deadline ?? now + UNREACHABLE_LIMIT_MS;
  if (instance.status === 'idle' && now > deadline) {
    await startTerminating(lock, 'unreachable', 'the instance did not answer for 20 minutes');
    return;
  }
  await lock.release({ unreachable: 1, termination_deadline: deadline });
}

async function processTerminating(app: AppContext, instance: InstancesTable, lock: RowLock): Promise<void> {
  const provisioningData = provisioningDataOf(instance);
  const now = Date.now();
  if (provisioningData) {
    const compute = await computeOf(app, instance);
    const firstTry = instance.first_termination_retry_at ?? now;
    try {
      if (!compute) throw new Error(`backend ${instance.backend} is not configured`);
      await compute.terminateInstance(
        provisioningData.instance_id,
        provisioningData.region,
        provisioningData.backend_data,
      );
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
  runServicesOf(app).wakeUps.wake('fleets');
  await markInstanceJobsDue(app, instance.id);
}

export function instancePipeline(app: AppContext): PipelineDefinition<InstancesTable> {
  return {
    name: 'instances',
    table: 'instances',
    statuses: ['provisioning', 'idle', 'busy', 'terminating'],
    minIntervalMs: MIN_INTERVAL_MS,
    workers: 20,
    async process(instance, lock) {
      if (instance.status === 'provisioning') await processProvisioning(app, instance, lock);
      else if (instance.status === 'terminating') await processTerminating(app, instance, lock);
      else await processIdleOrBusy(app, instance, lock);
    },
  };
}
