/**
 * Volumes (dstack's volume pipeline and `process_idle_volumes`): a `submitted` volume becomes
 * `provisioning` and is created (`size`) or registered (`volume_id`) by its backend, then
 * `active`, or `failed` with the reason in `status_message`. A `provisioning` volume is one a
 * server stopped in the middle of: it is created again with the same id (`createVolume` is
 * idempotent on it). An `active` volume with `auto_cleanup_duration` that no job has attached
 * for that long is deleted. A volume marked `to_be_deleted` whose provider call failed is
 * deleted again until it goes.
 */
import { externalVolumeId, type Volume } from '@dstack/core';
import type { AppContext } from '../context.js';
import { volumeConfigurationOf, volumeProvisioningDataColumn } from '../db/json-columns.js';
import type { VolumesTable } from '../db/schema.js';
import { errorMessage } from '../error-message.js';
import { eventTargets, recordEvent, SYSTEM_ACTOR } from '../events/event-recorder.js';
import { recordStatusChange } from '../events/status-events.js';
import type { PipelineDefinition, RowLock } from '../pipelines/pipeline.js';
import { dueIn } from '../pipelines/pipeline.js';
import { volumeComputeOf } from './volume-backends.js';
import { volumesOf } from './volume-models.js';
import { deleteAtProvider, lockVolumeRow, markDeleted } from './volumes.js';

/** dstack processes volumes every 15 s; idle ones are looked at every 60 s. */
const MIN_INTERVAL_MS = 15_000;
/** A deletion that failed at the provider is tried again after this long. */
const DELETE_RETRY_MS = 30_000;

async function provision(app: AppContext, volume: VolumesTable, lock: RowLock<'volumes'>): Promise<void> {
  const configuration = volumeConfigurationOf(volume);
  if (volume.status === 'submitted') {
    // Recorded before the provider call: a server that dies in it leaves the volume `provisioning`.
    const marked = await app.db.transaction().execute(async (transaction) => {
      const result = await transaction
        .updateTable('volumes')
        .set({ status: 'provisioning' })
        .where('id', '=', volume.id)
        .where('lock_token', '=', lock.token)
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) return false;
      await recordStatusChange(transaction, app.settings.events, 'volumes', volume, {
        status: 'provisioning',
      });
      return true;
    });
    if (!marked) return;
  }
  const backend = await volumeComputeOf(app, volume.project_id, configuration.backend);
  if ('refusal' in backend) {
    await lock.release({ status: 'failed', status_message: backend.refusal });
    return;
  }
  const [model] = await volumesOf(app, [{ ...volume, status: 'provisioning' }]);
  const registering = externalVolumeId(configuration) !== undefined;
  try {
    const provisioningData = registering
      ? await backend.compute.registerVolume(model as Volume)
      : await backend.compute.createVolume(model as Volume);
    await lock.release({
      status: 'active',
      status_message: null,
      volume_provisioning_data: volumeProvisioningDataColumn.encode({
        ...provisioningData,
        backend: provisioningData.backend ?? configuration.backend,
      }),
    });
  } catch (error) {
    const what = registering ? 'registering' : 'creating';
    await lock.release({
      status: 'failed',
      status_message: `${what} the volume failed: ${errorMessage(error)}`,
    });
  }
}

/** Whether the active volume's `auto_cleanup_duration` has passed with no job attaching it. */
async function idleLongEnough(app: AppContext, volume: VolumesTable): Promise<boolean> {
  const duration = volumeConfigurationOf(volume).auto_cleanup_duration;
  if (duration === undefined || duration === 'off') return false;
  const attached = await app.db
    .selectFrom('volume_attachments')
    .select('volume_id')
    .where('volume_id', '=', volume.id)
    .executeTakeFirst();
  if (attached) return false;
  const idleSince = volume.last_job_processed_at ?? volume.created_at;
  return Date.now() - idleSince > duration * 1000;
}

/** Deletes the volume at its provider and forgets it; a failure is tried again later. */
async function deleteVolume(app: AppContext, volume: VolumesTable, lock: RowLock<'volumes'>): Promise<void> {
  try {
    await deleteAtProvider(app, volume);
  } catch (error) {
    console.error(`[volumes] deleting ${volume.name} at its provider failed: ${errorMessage(error)}`);
    await lock.release({ last_processed_at: dueIn(DELETE_RETRY_MS, MIN_INTERVAL_MS) });
    return;
  }
  await markDeleted(app, volume);
}

/**
 * Marks an idle volume for deletion, unless a job attached it since it was read: the attachment
 * takes the volume's row lock and refuses a volume marked `to_be_deleted` (`job-volumes.ts`).
 */
async function cleanUpIdle(app: AppContext, volume: VolumesTable, lock: RowLock<'volumes'>): Promise<void> {
  const marked = await app.db.transaction().execute(async (transaction) => {
    const current = await lockVolumeRow(transaction, app.dialect, volume.id);
    if (current?.lock_token !== lock.token) return false;
    // Read after the lock, in a statement of its own: an attachment committed meanwhile is seen.
    const attached = await transaction
      .selectFrom('volume_attachments')
      .select('volume_id')
      .where('volume_id', '=', volume.id)
      .executeTakeFirst();
    if (attached) return false;
    await transaction
      .updateTable('volumes')
      .set({ to_be_deleted: 1, status_message: 'deleted after its auto_cleanup_duration without use' })
      .where('id', '=', volume.id)
      .execute();
    await recordEvent(transaction, app.settings.events, {
      message: 'Volume marked for deletion due to exceeding auto_cleanup_duration',
      actor: SYSTEM_ACTOR,
      targets: [eventTargets.volume(volume)],
    });
    return true;
  });
  if (!marked) return;
  await deleteVolume(app, { ...volume, to_be_deleted: 1 }, lock);
}

export function volumePipeline(app: AppContext): PipelineDefinition<'volumes'> {
  return {
    name: 'volumes',
    table: 'volumes',
    statuses: ['submitted', 'provisioning', 'active', 'failed'],
    minIntervalMs: MIN_INTERVAL_MS,
    workers: 10,
    undeletedOnly: true,
    async process(volume, lock) {
      if (volume.to_be_deleted === 1) {
        await deleteVolume(app, volume, lock);
        return;
      }
      if (volume.status === 'submitted' || volume.status === 'provisioning') {
        await provision(app, volume, lock);
        return;
      }
      if (volume.status === 'active' && (await idleLongEnough(app, volume))) {
        await cleanUpIdle(app, volume, lock);
      }
    },
  };
}
