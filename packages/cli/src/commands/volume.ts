/** `dstack volume list|delete`, and applying and deleting a `type: volume` configuration. */
import { setTimeout as sleep } from 'node:timers/promises';
import { type Volume, type VolumeConfiguration, wireBackendType } from '@dstack/core';
import type { DstackApiClient } from '../api/client.js';
import type { CliIo } from '../io.js';
import { type Colors, createColors } from '../output/colors.js';
import { CommandError } from '../output/command-error.js';
import { formatRelativeTime } from '../output/format.js';
import { formatTable } from '../output/table.js';
import { confirmAction } from './confirm.js';
import { connect, type ProjectOption } from './connect.js';

/** How often `apply` looks at a volume being created, and for how long. */
const PROVISION_POLL_MS = 500;
const PROVISION_TIMEOUT_MS = 10 * 60_000;

/**
 * Volumes as dstack's table: NAME, BACKEND (`backend (region)`), STATUS, CREATED; with `verbose`
 * BACKEND is the backend alone, and REGION (with the zone), ATTACHED (the fleets of the instances
 * it is attached to) and ERROR are added.
 */
export function formatVolumes(
  volumes: readonly Volume[],
  colors: Colors,
  verbose = false,
  now = new Date(),
): string {
  const columns = verbose
    ? ['NAME', 'BACKEND', 'REGION', 'STATUS', 'ATTACHED', 'CREATED', 'ERROR']
    : ['NAME', 'BACKEND', 'STATUS', 'CREATED'];
  const rows = volumes.map((volume) => {
    const { backend, region } = volume.configuration;
    const zone = volume.provisioning_data?.availability_zone;
    const fleets = [
      ...new Set(
        (volume.attachments ?? []).map((attachment) => attachment.instance.fleet_name).filter(Boolean),
      ),
    ];
    const created = formatRelativeTime(volume.created_at, now);
    return verbose
      ? [
          volume.name,
          backend,
          zone ? `${region} (${zone})` : region,
          volume.status,
          fleets.join(', ') || '-',
          created,
          volume.status_message ?? '',
        ]
      : [volume.name, `${backend} (${region})`, volume.status, created];
  });
  return formatTable(columns, rows, { styleHeader: colors.bold });
}

export interface VolumeListOptions extends ProjectOption {
  /** Add REGION, ATTACHED and ERROR. Default false. */
  verbose?: boolean;
}

/** `dstack volume list`. */
export async function volumeListCommand(options: VolumeListOptions, io: CliIo): Promise<number> {
  const client = await connect(options, io);
  const volumes = await client.listVolumes();
  io.stdout(formatVolumes(volumes, createColors(Boolean(io.stdoutColors)), Boolean(options.verbose)));
  return 0;
}

export interface VolumeDeleteOptions extends ProjectOption {
  /** Do not ask for confirmation. Default false. */
  yes?: boolean;
}

/** `dstack volume delete NAME`: refused by the server while a run holds the volume. */
export async function volumeDeleteCommand(
  name: string,
  options: VolumeDeleteOptions,
  io: CliIo,
): Promise<number> {
  const client = await connect(options, io);
  return deleteVolume(client, name, options.yes, io);
}

async function deleteVolume(
  client: DstackApiClient,
  name: string,
  yes: boolean | undefined,
  io: CliIo,
): Promise<number> {
  if (!(await client.getVolume(name))) {
    io.stdout(`Volume ${name} does not exist\n`);
    return 0;
  }
  if (!(await confirmAction(io, `Delete the volume ${name}?`, yes))) return 0;
  await client.deleteVolumes([name]);
  io.stdout(`Volume ${name} deleted\n`);
  return 0;
}

/** `dstack delete -f volume.dstack.yml`. */
export async function deleteVolumeConfiguration(
  client: DstackApiClient,
  configuration: VolumeConfiguration,
  yes: boolean | undefined,
  io: CliIo,
): Promise<number> {
  if (!configuration.name) throw new CommandError('Configuration specifies no volume to delete');
  return deleteVolume(client, configuration.name, yes, io);
}

export interface ApplyVolumeOptions extends ProjectOption {
  yes?: boolean;
  /** Re-create the volume even when its configuration has not changed. */
  force?: boolean;
  /** Do not wait for the volume to be active. */
  detach?: boolean;
}

/** Whether the server's volume has this configuration (its backend as the server shows it: `local` is `remote`). */
function sameConfiguration(volume: Volume, configuration: VolumeConfiguration): boolean {
  const stored = volume.configuration as Record<string, unknown>;
  return Object.entries(configuration).every(([key, value]) => {
    if (value === undefined) return true;
    const sent = key === 'backend' && typeof value === 'string' ? wireBackendType(value) : value;
    return JSON.stringify(stored[key]) === JSON.stringify(sent);
  });
}

/**
 * `dstack apply -f volume.dstack.yml`, as dstack's volume configurator: an existing volume of the
 * name is re-created (after a confirmation; with an unchanged configuration only with `--force`),
 * then the new volume is followed until it is active or failed.
 */
export async function applyVolume(
  configuration: VolumeConfiguration,
  options: ApplyVolumeOptions,
  io: CliIo,
): Promise<number> {
  const client = await connect(options, io);
  const colors = createColors(Boolean(io.stdoutColors));
  const name = configuration.name;
  const existing = name ? await client.getVolume(name) : null;
  if (existing && name) {
    if (sameConfiguration(existing, configuration)) {
      if (!options.force) {
        io.stdout('Volume configuration has not changed. Use --force to recreate the volume.\n');
        return 0;
      }
      if (
        !(await confirmAction(io, 'Volume configuration has not changed. Re-create the volume?', options.yes))
      )
        return 0;
    } else if (
      !(await confirmAction(io, `Volume ${name} already exists. Re-create the volume?`, options.yes))
    ) {
      return 0;
    }
    await client.deleteVolumes([name]);
  } else if (
    !(await confirmAction(
      io,
      `Volume ${name ?? '(a generated name)'} does not exist yet. Create the volume?`,
      options.yes,
    ))
  ) {
    return 0;
  }
  let volume = await client.createVolume(configuration);
  if (!options.detach) {
    const deadline = Date.now() + PROVISION_TIMEOUT_MS;
    while ((volume.status === 'submitted' || volume.status === 'provisioning') && Date.now() < deadline) {
      await sleep(PROVISION_POLL_MS);
      volume = (await client.getVolume(volume.name)) ?? volume;
    }
  }
  io.stdout(formatVolumes([volume], colors, volume.status === 'failed'));
  if (volume.status === 'failed') {
    io.stderr(`Volume ${volume.name} failed: ${volume.status_message ?? 'no reason given'}\n`);
    return 1;
  }
  return 0;
}
