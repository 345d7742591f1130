/**
 * Network volumes (`type: volume`): created or registered by the volume pipeline, attached to
 * the instances of the jobs that mount them (`job-volumes.ts`), deleted on request or after
 * their `auto_cleanup_duration`. A volume attached to an instance is never deleted: the
 * refusal names the run that holds it.
 */
import { randomUUID } from 'node:crypto';
import {
  externalVolumeId,
  ServerClientError,
  type Volume,
  type VolumeConfiguration,
  validateConfigurationOfType,
} from '@dstack/core';
import type { Transaction } from 'kysely';
import { serializeProjectWrites } from '../accounts/projects.js';
import type { AppContext, SqlDialect } from '../context.js';
import {
  volumeConfigurationColumn,
  volumeConfigurationOf,
  volumeProvisioningDataOf,
} from '../db/json-columns.js';
import { nameTakenError, requireEachFound, requireFound } from '../db/named-resources.js';
import type { Database, ProjectsTable, UsersTable, VolumesTable } from '../db/schema.js';
import { errorMessage } from '../error-message.js';
import {
  type EventActor,
  eventTargets,
  recordEvent,
  recordEvents,
  SYSTEM_ACTOR,
  userActor,
} from '../events/event-recorder.js';
import { volumeComputeOf } from './volume-backends.js';
import { volumesOf } from './volume-models.js';
import { assertVolumeLocationFree } from './volume-ownership.js';

/**
 * Locks the volume's row until the transaction ends (Postgres; SQLite runs one transaction at a
 * time): attaching it and deleting it both take this lock first, so a volume is never deleted
 * while a job attaches it, nor attached once its deletion was decided.
 */
export async function lockVolumeRow(
  transaction: Transaction<Database>,
  dialect: SqlDialect,
  volumeId: string,
): Promise<VolumesTable | undefined> {
  let query = transaction.selectFrom('volumes').selectAll().where('id', '=', volumeId);
  if (dialect === 'postgres') query = query.forUpdate();
  return query.executeTakeFirst();
}

function validatedVolumeConfiguration(input: unknown): VolumeConfiguration {
  return validateConfigurationOfType(input, 'volume', ['configuration']);
}

/** The project's volume rows that exist for users: neither deleted nor being deleted. */
function liveVolumes(app: AppContext, projectId: string) {
  return app.db
    .selectFrom('volumes')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('deleted', '=', 0)
    .where('to_be_deleted', '=', 0);
}

/** `volumes/create`: records the volume `submitted`; its pipeline creates or registers it. */
export async function createVolume(
  app: AppContext,
  project: ProjectsTable,
  user: UsersTable,
  configurationInput: unknown,
): Promise<Volume> {
  const configuration = validatedVolumeConfiguration(configurationInput);
  const backend = await volumeComputeOf(app, project.id, configuration.backend);
  if ('refusal' in backend) {
    throw new ServerClientError(backend.refusal, { fields: [['configuration', 'backend']] });
  }
  const name = configuration.name ?? `volume-${randomUUID().slice(0, 8)}`;
  const stored = { ...configuration, name };
  const row: VolumesTable = {
    id: randomUUID(),
    project_id: project.id,
    user_id: user.id,
    name,
    status: 'submitted',
    status_message: null,
    configuration: volumeConfigurationColumn.encode(stored),
    volume_provisioning_data: null,
    created_at: Date.now(),
    // Due at once: the pipeline creates it.
    last_processed_at: 0,
    last_job_processed_at: null,
    to_be_deleted: 0,
    deleted: 0,
    deleted_at: null,
    lock_expires_at: null,
    lock_token: null,
    lock_owner: null,
  };
  const inserted = await app.db.transaction().execute(async (transaction) => {
    // Names are unique among live volumes; one check-and-insert at a time per project.
    await serializeProjectWrites(transaction, app.dialect, project.id);
    const existing = await transaction
      .selectFrom('volumes')
      .select('id')
      .where('project_id', '=', project.id)
      .where('name', '=', name)
      .where('deleted', '=', 0)
      .where('to_be_deleted', '=', 0)
      .executeTakeFirst();
    if (existing) return false;
    if (configuration.volume_id !== undefined) {
      await assertVolumeLocationFree(app, transaction, project.id, backend.compute, configuration.volume_id);
    }
    await transaction.insertInto('volumes').values(row).execute();
    await recordEvent(transaction, app.settings.events, {
      message: 'Volume created. Status: SUBMITTED',
      actor: userActor(user),
      targets: [eventTargets.volume(row)],
    });
    return true;
  });
  if (!inserted) throw nameTakenError('Volume', name);
  app.wakeUps.wake('volumes');
  const [volume] = await volumesOf(app, [row]);
  return volume as Volume;
}

export async function getVolume(app: AppContext, project: ProjectsTable, name: string): Promise<Volume> {
  const row = requireFound(
    'Volume',
    name,
    await liveVolumes(app, project.id).where('name', '=', name).executeTakeFirst(),
  );
  const [volume] = await volumesOf(app, [row]);
  return volume as Volume;
}

export async function listProjectVolumes(app: AppContext, project: ProjectsTable): Promise<Volume[]> {
  return volumesOf(app, await liveVolumes(app, project.id).orderBy('created_at').execute());
}

export interface ListVolumesOptions {
  projectIds: readonly string[];
  onlyActive: boolean;
  prevCreatedAt: number | null;
  prevId: string | null;
  limit: number;
  ascending: boolean;
}

/** `/api/volumes/list`: volumes of the given projects (deleted ones too unless `onlyActive`), paged by creation. */
export async function listVolumes(app: AppContext, options: ListVolumesOptions): Promise<Volume[]> {
  if (options.projectIds.length === 0) return [];
  let query = app.db
    .selectFrom('volumes')
    .selectAll()
    .where('project_id', 'in', [...options.projectIds]);
  if (options.onlyActive) query = query.where('deleted', '=', 0).where('to_be_deleted', '=', 0);
  if (options.prevCreatedAt !== null) {
    const at = options.prevCreatedAt;
    const prevId = options.prevId;
    query = query.where((eb) => {
      const beyond = options.ascending ? eb('created_at', '>', at) : eb('created_at', '<', at);
      if (prevId === null) return beyond;
      const tie = eb.and([eb('created_at', '=', at), eb('id', options.ascending ? '<' : '>', prevId)]);
      return eb.or([beyond, tie]);
    });
  }
  const rows = await query
    .orderBy('created_at', options.ascending ? 'asc' : 'desc')
    .orderBy('id', options.ascending ? 'desc' : 'asc')
    .limit(options.limit)
    .execute();
  return volumesOf(app, rows);
}

/** Why a volume cannot be deleted now: the runs whose jobs hold it attached, or null. */
async function attachedRefusal(
  transaction: Transaction<Database>,
  volume: VolumesTable,
): Promise<string | null> {
  const holders = await transaction
    .selectFrom('volume_attachments')
    .innerJoin('instances', 'instances.id', 'volume_attachments.instance_id')
    .leftJoin('jobs', 'jobs.id', 'volume_attachments.job_id')
    .select(['instances.name as instance_name', 'jobs.run_name as run_name'])
    .where('volume_attachments.volume_id', '=', volume.id)
    .execute();
  if (holders.length === 0) return null;
  const runs = [...new Set(holders.map((holder) => holder.run_name).filter((name) => name !== null))];
  const instances = holders.map((holder) => holder.instance_name).join(', ');
  const by = runs.length > 0 ? `run ${runs.join(', ')} (instance ${instances})` : `instance ${instances}`;
  return `Failed to delete volume ${volume.name}: it is attached to ${by}; stop the run first`;
}

/**
 * `volumes/delete`: refused (nothing deleted) while any of them is attached, naming the run that
 * holds it. Otherwise each is marked `to_be_deleted` (hidden, never attached again) and deleted
 * at its provider at once; one whose provider call fails stays marked and its pipeline retries.
 * Registered (external) volumes and volumes never provisioned are only forgotten, as in dstack.
 */
export async function deleteVolumes(
  app: AppContext,
  project: ProjectsTable,
  names: readonly string[],
  actor: EventActor = SYSTEM_ACTOR,
): Promise<void> {
  const rows = requireEachFound(
    'Volume',
    names,
    await liveVolumes(app, project.id)
      .where('name', 'in', [...names])
      .orderBy('id')
      .execute(),
    (row) => row.name,
  );
  await app.db.transaction().execute(async (transaction) => {
    const locked: VolumesTable[] = [];
    for (const row of rows) {
      const current = await lockVolumeRow(transaction, app.dialect, row.id);
      if (current && current.deleted === 0 && current.to_be_deleted === 0) locked.push(current);
    }
    for (const volume of locked) {
      const refusal = await attachedRefusal(transaction, volume);
      if (refusal) throw new ServerClientError(refusal, { code: 'resource_in_use' });
    }
    if (locked.length === 0) return;
    await transaction
      .updateTable('volumes')
      .set({
        to_be_deleted: 1,
        last_processed_at: 0,
        lock_token: null,
        lock_owner: null,
        lock_expires_at: null,
      })
      .where(
        'id',
        'in',
        locked.map((volume) => volume.id),
      )
      .execute();
    await recordEvents(
      transaction,
      app.settings.events,
      locked.map((volume) => ({
        message: 'Volume marked for deletion',
        actor,
        targets: [eventTargets.volume(volume)],
      })),
    );
  });
  for (const row of rows) {
    try {
      await deleteAtProvider(app, row);
      await markDeleted(app, row);
    } catch (error) {
      console.error(
        `[volumes] deleting ${row.name} at its provider failed, retried later: ${errorMessage(error)}`,
      );
      app.wakeUps.wake('volumes');
    }
  }
}

/** Deletes the volume at its provider, unless it was registered (external) or never provisioned. */
export async function deleteAtProvider(app: AppContext, volume: VolumesTable): Promise<void> {
  const configuration = volumeConfigurationOf(volume);
  const provisioning = volumeProvisioningDataOf(volume);
  if (externalVolumeId(configuration) !== undefined || provisioning === null) return;
  const backend = await volumeComputeOf(
    app,
    volume.project_id,
    provisioning.backend ?? configuration.backend,
  );
  if ('refusal' in backend) {
    // The backend left the project: nothing can reach the volume; it is forgotten, as in dstack.
    console.error(`[volumes] ${volume.name} is not deleted at its provider: ${backend.refusal}`);
    return;
  }
  const [model] = await volumesOf(app, [volume]);
  await backend.compute.deleteVolume(model as Volume);
}

export async function markDeleted(app: AppContext, volume: VolumesTable): Promise<void> {
  await app.db.transaction().execute(async (transaction) => {
    const deleted = await transaction
      .updateTable('volumes')
      .set({ deleted: 1, deleted_at: Date.now(), lock_token: null, lock_owner: null, lock_expires_at: null })
      .where('id', '=', volume.id)
      .where('deleted', '=', 0)
      .executeTakeFirst();
    if (Number(deleted.numUpdatedRows) !== 1) return;
    await recordEvent(transaction, app.settings.events, {
      message: 'Volume deleted',
      actor: SYSTEM_ACTOR,
      targets: [eventTargets.volume(volume)],
    });
  });
}
