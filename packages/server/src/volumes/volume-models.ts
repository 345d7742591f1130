/** Volume rows → the API model of @dstack/core (`Volume`), with where each is attached. */
import { externalVolumeId, type Volume, type VolumeAttachment } from '@dstack/core';
import type { AppContext } from '../context.js';
import {
  instanceProvisioningDataOf,
  volumeAttachmentDataOf,
  volumeConfigurationOf,
  volumeProvisioningDataOf,
} from '../db/json-columns.js';
import type { VolumesTable } from '../db/schema.js';
import { isoTime } from '../http/iso-time.js';

/** Clouds charge volumes by 30-day months (dstack's `_VOLUME_PRICING_PERIOD`). */
const PRICING_PERIOD_MS = 30 * 24 * 3600 * 1000;

/** The volume's cost so far: its monthly price over the time it existed (until deleted, or failed). */
function costOf(volume: VolumesTable, price: number | null | undefined): number {
  if (price == null) return 0;
  const end = volume.deleted_at ?? (volume.status === 'failed' ? volume.last_processed_at : Date.now());
  return (Math.max(0, end - volume.created_at) / PRICING_PERIOD_MS) * price;
}

/** The API model of a volume row, given its attachments as `attachmentsOf` reads them. */
export function volumeOf(
  volume: VolumesTable,
  projectName: string,
  userName: string,
  attachments: readonly VolumeAttachment[],
): Volume {
  const configuration = volumeConfigurationOf(volume);
  const provisioning = volumeProvisioningDataOf(volume);
  const provisioningData = provisioning
    ? { ...provisioning, backend: provisioning.backend ?? configuration.backend }
    : null;
  return {
    id: volume.id,
    name: volume.name,
    user: userName,
    project_name: projectName,
    configuration: {
      ...configuration,
      // The API carries dstack's shape: `auto_cleanup_duration` as given, `size` in GB.
      auto_cleanup_duration: configuration.auto_cleanup_duration ?? null,
    },
    external: externalVolumeId(configuration) !== undefined,
    created_at: isoTime(volume.created_at) as string,
    last_processed_at: isoTime(volume.last_processed_at === 0 ? volume.created_at : volume.last_processed_at),
    status: volume.status,
    status_message: volume.status_message,
    deleted: volume.deleted === 1,
    deleted_at: isoTime(volume.deleted_at),
    volume_id: provisioningData?.volume_id ?? null,
    provisioning_data: provisioningData,
    attachments: [...attachments],
    attachment_data: attachments[0]?.attachment_data ?? null,
    cost: costOf(volume, provisioningData?.price),
  };
}

/** The attachments of each of `volumeIds`, with the instance (and its fleet) each is attached to. */
export async function attachmentsOf(
  app: AppContext,
  volumeIds: readonly string[],
): Promise<Map<string, VolumeAttachment[]>> {
  const result = new Map<string, VolumeAttachment[]>();
  if (volumeIds.length === 0) return result;
  const rows = await app.db
    .selectFrom('volume_attachments')
    .innerJoin('instances', 'instances.id', 'volume_attachments.instance_id')
    .leftJoin('fleets', 'fleets.id', 'instances.fleet_id')
    .select([
      'volume_attachments.volume_id as volume_id',
      'volume_attachments.instance_id as instance_id',
      'volume_attachments.attachment_data as attachment_data',
      'instances.name as instance_name',
      'instances.instance_num as instance_num',
      'instances.job_provisioning_data as job_provisioning_data',
      'fleets.name as fleet_name',
    ])
    .where('volume_attachments.volume_id', 'in', [...volumeIds])
    .orderBy('volume_attachments.created_at')
    .execute();
  for (const row of rows) {
    const provisioning = instanceProvisioningDataOf({
      id: row.instance_id,
      job_provisioning_data: row.job_provisioning_data,
    });
    const list = result.get(row.volume_id) ?? [];
    list.push({
      instance: {
        name: row.instance_name,
        fleet_name: row.fleet_name,
        instance_num: row.instance_num,
        instance_id: provisioning?.instance_id ?? null,
      },
      attachment_data: volumeAttachmentDataOf(row),
    });
    result.set(row.volume_id, list);
  }
  return result;
}

/** The API models of volume rows (their projects' and users' names, their attachments). */
export async function volumesOf(app: AppContext, rows: readonly VolumesTable[]): Promise<Volume[]> {
  if (rows.length === 0) return [];
  const projects = await app.db
    .selectFrom('projects')
    .select(['id', 'name'])
    .where('id', 'in', [...new Set(rows.map((row) => row.project_id))])
    .execute();
  const users = await app.db
    .selectFrom('users')
    .select(['id', 'name'])
    .where('id', 'in', [...new Set(rows.map((row) => row.user_id))])
    .execute();
  const attachments = await attachmentsOf(
    app,
    rows.map((row) => row.id),
  );
  const projectNames = new Map(projects.map((project) => [project.id, project.name]));
  const userNames = new Map(users.map((user) => [user.id, user.name]));
  return rows.map((row) =>
    volumeOf(
      row,
      projectNames.get(row.project_id) ?? '',
      userNames.get(row.user_id) ?? '',
      attachments.get(row.id) ?? [],
    ),
  );
}
