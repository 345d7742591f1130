import { type Fleet, type FleetNodes, type Instance, InstanceTypeSchema } from '@dstack/core';
import type { CliIo } from '../io.js';
import { type Colors, createColors } from '../output/colors.js';
import { formatPrice, formatRelativeTime, formatResources } from '../output/format.js';
import { formatTable } from '../output/table.js';
import { confirmAction } from './confirm.js';
import { connect, type ProjectOption } from './connect.js';

const FLEET_COLUMNS = ['NAME', 'NODES', 'RESOURCES', 'BACKEND', 'PRICE', 'STATUS', 'CREATED'];

function formatNodes(fleet: Fleet): string {
  const configuration = fleet.spec.configuration as {
    nodes?: FleetNodes;
    ssh_config?: { hosts?: unknown[] };
  };
  const nodes = configuration.nodes;
  if (nodes) return nodes.min === nodes.max ? String(nodes.min) : `${nodes.min ?? 0}..${nodes.max ?? ''}`;
  const hosts = configuration.ssh_config?.hosts;
  return hosts ? `${hosts.length} (ssh)` : '-';
}

function instanceResources(instance: Instance): string {
  // The API types `instance_type` loosely; its resources are shown when they are well-formed.
  const instanceType = InstanceTypeSchema.safeParse(instance.instance_type);
  if (instanceType.success) return formatResources(instanceType.data.resources);
  return instance.instance_type?.name ?? '-';
}

function instanceBackend(instance: Instance): string {
  if (!instance.backend) return '-';
  return instance.region ? `${instance.backend} (${instance.region})` : instance.backend;
}

/** The instance's status; one split into blocks and partly taken says how many (`2/4 busy`), as dstack does. */
function instanceStatus(instance: Instance): string {
  const totalBlocks = instance.total_blocks ?? 1;
  if (
    totalBlocks > 1 &&
    instance.busy_blocks > 0 &&
    (instance.status === 'idle' || instance.status === 'busy')
  ) {
    return `${instance.busy_blocks}/${totalBlocks} busy`;
  }
  return instance.status;
}

/**
 * Fleets as a table, one line per instance: the fleet's name and nodes on its first line; a fleet
 * without instances gets one line with its own status.
 */
export function formatFleets(fleets: readonly Fleet[], colors: Colors, now = new Date()): string {
  const rows: string[][] = [];
  for (const fleet of fleets) {
    const nodes = formatNodes(fleet);
    if (fleet.instances.length === 0) {
      rows.push([fleet.name, nodes, '-', '-', '-', fleet.status, formatRelativeTime(fleet.created_at, now)]);
      continue;
    }
    fleet.instances.forEach((instance, index) => {
      rows.push([
        index === 0 ? fleet.name : '',
        index === 0 ? nodes : '',
        instanceResources(instance),
        instanceBackend(instance),
        formatPrice(instance.price),
        instanceStatus(instance),
        formatRelativeTime(instance.created, now),
      ]);
    });
  }
  return formatTable(FLEET_COLUMNS, rows, { styleHeader: colors.bold });
}

/** `dstack fleet list`. */
export async function fleetListCommand(options: ProjectOption, io: CliIo): Promise<number> {
  const client = await connect(options, io);
  const fleets = await client.listFleets();
  io.stdout(formatFleets(fleets, createColors(Boolean(io.stdoutColors))));
  return 0;
}

export interface FleetDeleteOptions extends ProjectOption {
  /** Do not ask for confirmation. Default false. */
  yes?: boolean;
}

/** `dstack fleet delete NAME`: terminates the fleet's instances and deletes it. */
export async function fleetDeleteCommand(
  name: string,
  options: FleetDeleteOptions,
  io: CliIo,
): Promise<number> {
  const client = await connect(options, io);
  if (!(await confirmAction(io, `Delete the fleet ${name}?`, options.yes))) return 0;
  await client.deleteFleets({ names: [name] });
  io.stdout(`Deleting fleet ${name}\n`);
  return 0;
}
