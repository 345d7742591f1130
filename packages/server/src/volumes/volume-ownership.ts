/**
 * A volume's backing belongs to one project. On a backend whose storage is the server host's,
 * shared by every project (the local backend's `volumes_dir`), a registration (`volume_id`) could
 * otherwise hand one project another's directory and the data in it. Such a backend names where a
 * volume lives (`volumeLocation`); a project may not register a location that a live volume of
 * another project (created or registered) holds. Cloud volumes live in the project's own account,
 * which only its credentials reach, so those backends name no location and are not checked.
 */
import { type ComputeWithVolumes, externalVolumeId, ServerClientError } from '@dstack/core';
import { sql, type Transaction } from 'kysely';
import type { AppContext } from '../context.js';
import { volumeConfigurationOf, volumeProvisioningDataOf } from '../db/json-columns.js';
import type { Database, VolumesTable } from '../db/schema.js';
import { volumeComputeOf } from './volume-backends.js';

/**
 * Postgres advisory lock key that makes registrations one at a time across projects (a
 * per-project lock would let two projects check the same directory at once); SQLite runs one
 * write transaction at a time already. Registrations are rare, so one key for all is enough.
 */
const REGISTRATION_LOCK_KEY = 0x766f6c73; // "vols"

/** The location `compute` gives the volume id, or null when it names none (or cannot name this id). */
function locationOf(compute: ComputeWithVolumes, volumeId: string): string | null {
  if (!compute.volumeLocation) return null;
  try {
    return compute.volumeLocation(volumeId);
  } catch {
    // An id the backend cannot name is refused when the volume is registered, with its reason.
    return null;
  }
}

/** The provider id a volume row holds: what it was created as, or the id it registers. */
function providerIdOf(volume: VolumesTable): string | undefined {
  return volumeProvisioningDataOf(volume)?.volume_id ?? externalVolumeId(volumeConfigurationOf(volume));
}

/**
 * Throws (400, naming `configuration.volume_id`) when the location of `volumeId` on `compute` is
 * held by a live volume of a project other than `projectId`. Run inside the transaction that
 * inserts the registration.
 */
export async function assertVolumeLocationFree(
  app: AppContext,
  transaction: Transaction<Database>,
  projectId: string,
  compute: ComputeWithVolumes,
  volumeId: string,
): Promise<void> {
  const location = locationOf(compute, volumeId);
  if (location === null) return;
  if (app.dialect === 'postgres') {
    await sql`SELECT pg_advisory_xact_lock(${REGISTRATION_LOCK_KEY})`.execute(transaction);
  }
  // Not yet deleted: a volume marked for deletion still holds its directory until it goes.
  const others = await transaction
    .selectFrom('volumes')
    .selectAll()
    .where('project_id', '!=', projectId)
    .where('deleted', '=', 0)
    .execute();
  for (const other of others) {
    const otherId = providerIdOf(other);
    if (otherId === undefined) continue;
    const backend = await volumeComputeOf(app, other.project_id, volumeConfigurationOf(other).backend);
    if ('refusal' in backend) continue;
    if (locationOf(backend.compute, otherId) !== location) continue;
    throw new ServerClientError(
      `volume_id ${volumeId} is a volume of another project: a local volume's directory belongs to one project`,
      { fields: [['configuration', 'volume_id']] },
    );
  }
}
