/**
 * The JSON columns, each decoded with core's schema where rows are read: one codec per column,
 * so the stored spec reaches the code typed (no cast re-types it) and a bad stored document is
 * a clear error naming `table.column` and the row, not a field read as `undefined` later on.
 *
 * What is written is the schema's output (the validated value, defaults applied) and decoding
 * parses it again: the schemas are idempotent on their own output (json-columns.test.ts checks
 * it on real specs). The pipelines read the same documents on every pass, so a small cache
 * keyed by the exact stored text keeps one decoded value per row version; values are frozen,
 * since readers share them.
 */
import {
  type FleetConfiguration,
  fleetConfigurationSchema,
  type GatewayConfiguration,
  type GatewayReplicaProvisioningData,
  GatewayReplicaProvisioningDataSchema,
  gatewayConfigurationSchema,
  InstanceConfigurationSchema,
  type InstanceOfferWithAvailability,
  InstanceOfferWithAvailabilitySchema,
  type JobProvisioningData,
  JobProvisioningDataSchema,
  type JobRuntimeData,
  JobRuntimeDataSchema,
  type JobSpec,
  JobSpecSchema,
  type PlacementGroupConfiguration,
  PlacementGroupConfigurationSchema,
  type PlacementGroupProvisioningData,
  PlacementGroupProvisioningDataSchema,
  RepoInfoSchema,
  RequirementsSchema,
  RunSpecSchema,
  runConfigurationSchema,
  type VolumeAttachmentData,
  VolumeAttachmentDataSchema,
  type VolumeConfiguration,
  type VolumeProvisioningData,
  VolumeProvisioningDataSchema,
  volumeConfigurationSchema,
} from '@dstack/core';
import { z } from 'zod';
import type { Database } from './schema.js';

/** A run's spec as stored: its configuration validated by core's run configuration schemas. */
export const StoredRunSpecSchema = RunSpecSchema.extend({ configuration: runConfigurationSchema });
export type StoredRunSpec = z.output<typeof StoredRunSpecSchema>;

/** A fleet's spec as stored (`fleets.spec`): the validated fleet configuration. */
export const StoredFleetSpecSchema = z.object({ configuration: fleetConfigurationSchema });

/** A stored JSON document that its column's schema refuses (or that is not JSON at all). */
export class StoredJsonError extends Error {
  constructor(
    readonly column: string,
    readonly rowId: string,
    detail: string,
  ) {
    super(`${column} of row ${rowId} is not valid: ${detail}`);
    this.name = 'StoredJsonError';
  }
}

/** Decoded values kept per column: more than the rows one pipeline pass reads, few enough to be small. */
const CACHE_SIZE = 512;

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.length > 0 ? issue.path.join('.') : '(root)';
  return `${path}: ${issue.message}`;
}

/** The codec of one JSON column of one table. */
export class JsonColumn<Table extends keyof Database, Schema extends z.ZodType> {
  /** Decoded values by their stored text; null for a column whose values must not linger (secrets). */
  readonly #cache: Map<string, z.output<Schema>> | null;
  readonly name: string;

  constructor(
    table: Table,
    readonly column: string & keyof Database[Table],
    readonly schema: Schema,
    options: { cache?: boolean } = {},
  ) {
    this.name = `${table}.${column}`;
    this.#cache = options.cache === false ? null : new Map();
  }

  /** The text to store: a value the schema produced. */
  encode(value: z.output<Schema>): string {
    return JSON.stringify(value);
  }

  /** The stored text of row `rowId`, decoded; throws `StoredJsonError` naming the column and row. */
  decode(text: string, rowId: string): Readonly<z.output<Schema>> {
    const cache = this.#cache;
    const cached = cache?.get(text);
    if (cache && cached !== undefined) {
      // Most recently used last: the first key is the one to evict.
      cache.delete(text);
      cache.set(text, cached);
      return cached;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new StoredJsonError(this.name, rowId, `not JSON (${(error as Error).message})`);
    }
    const result = this.schema.safeParse(parsed);
    if (!result.success) {
      throw new StoredJsonError(this.name, rowId, result.error.issues.map(describeIssue).join('; '));
    }
    if (!cache) return result.data;
    const value = deepFreeze(result.data);
    if (cache.size >= CACHE_SIZE) {
      const oldest = cache.keys().next().value;
      if (oldest !== undefined) cache.delete(oldest);
    }
    cache.set(text, value);
    return value;
  }

  /** Like `decode`, for a nullable column. */
  decodeNullable(text: string | null | undefined, rowId: string): Readonly<z.output<Schema>> | null {
    return text === null || text === undefined ? null : this.decode(text, rowId);
  }
}

export const runSpecColumn = new JsonColumn('runs', 'run_spec', StoredRunSpecSchema);
export const jobSpecColumn = new JsonColumn('jobs', 'job_spec_data', JobSpecSchema);
export const jobProvisioningDataColumn = new JsonColumn(
  'jobs',
  'job_provisioning_data',
  JobProvisioningDataSchema,
);
export const jobRuntimeDataColumn = new JsonColumn('jobs', 'job_runtime_data', JobRuntimeDataSchema);
export const instanceOfferColumn = new JsonColumn('instances', 'offer', InstanceOfferWithAvailabilitySchema);
export const instanceProvisioningDataColumn = new JsonColumn(
  'instances',
  'job_provisioning_data',
  JobProvisioningDataSchema,
);
export const instanceRequirementsColumn = new JsonColumn('instances', 'requirements', RequirementsSchema);
export const instanceConfigurationColumn = new JsonColumn(
  'instances',
  'instance_configuration',
  InstanceConfigurationSchema,
);
export const fleetSpecColumn = new JsonColumn('fleets', 'spec', StoredFleetSpecSchema);
export const repoInfoColumn = new JsonColumn('repos', 'info', RepoInfoSchema);
export const placementGroupConfigurationColumn = new JsonColumn(
  'placement_groups',
  'configuration',
  PlacementGroupConfigurationSchema,
);
export const placementGroupProvisioningDataColumn = new JsonColumn(
  'placement_groups',
  'provisioning_data',
  PlacementGroupProvisioningDataSchema,
);
export const volumeConfigurationColumn = new JsonColumn(
  'volumes',
  'configuration',
  volumeConfigurationSchema,
);
export const volumeProvisioningDataColumn = new JsonColumn(
  'volumes',
  'volume_provisioning_data',
  VolumeProvisioningDataSchema,
);
export const gatewayConfigurationColumn = new JsonColumn(
  'gateways',
  'configuration',
  gatewayConfigurationSchema,
);
export const gatewayProvisioningDataColumn = new JsonColumn(
  'gateways',
  'provisioning_data',
  GatewayReplicaProvisioningDataSchema,
);

export function gatewayConfigurationOf(gateway: RowOf<'gateways', 'configuration'>): GatewayConfiguration {
  return gatewayConfigurationColumn.decode(gateway.configuration, gateway.id);
}

export function gatewayProvisioningDataOf(
  gateway: RowOf<'gateways', 'provisioning_data'>,
): GatewayReplicaProvisioningData | null {
  return gatewayProvisioningDataColumn.decodeNullable(gateway.provisioning_data, gateway.id);
}

export const volumeAttachmentDataColumn = new JsonColumn(
  'volume_attachments',
  'attachment_data',
  VolumeAttachmentDataSchema,
);

export const desiredReplicaCountsColumn = new JsonColumn(
  'runs',
  'desired_replica_counts',
  z.record(z.string(), z.number().int().nonnegative()),
);

/** The row's id (named in errors) and the column a reader decodes. */
type RowOf<Table extends keyof Database, Column extends keyof Database[Table]> = { id: string } & Pick<
  Database[Table],
  Column
>;

export function runSpecOf(run: RowOf<'runs', 'run_spec'>): StoredRunSpec {
  return runSpecColumn.decode(run.run_spec, run.id);
}

/** A service's desired replica count per replica group; null before the run pipeline first scaled it. */
export function desiredReplicaCountsOf(
  run: RowOf<'runs', 'desired_replica_counts'>,
): Readonly<Record<string, number>> | null {
  return desiredReplicaCountsColumn.decodeNullable(run.desired_replica_counts, run.id);
}

export function jobSpecOf(job: RowOf<'jobs', 'job_spec_data'>): JobSpec {
  return jobSpecColumn.decode(job.job_spec_data, job.id);
}

export function jobProvisioningDataOf(
  job: RowOf<'jobs', 'job_provisioning_data'>,
): JobProvisioningData | null {
  return jobProvisioningDataColumn.decodeNullable(job.job_provisioning_data, job.id);
}

export function jobRuntimeDataOf(job: RowOf<'jobs', 'job_runtime_data'>): JobRuntimeData | null {
  return jobRuntimeDataColumn.decodeNullable(job.job_runtime_data, job.id);
}

export function instanceOfferOf(instance: RowOf<'instances', 'offer'>): InstanceOfferWithAvailability | null {
  return instanceOfferColumn.decodeNullable(instance.offer, instance.id);
}

export function instanceProvisioningDataOf(
  instance: RowOf<'instances', 'job_provisioning_data'>,
): JobProvisioningData | null {
  return instanceProvisioningDataColumn.decodeNullable(instance.job_provisioning_data, instance.id);
}

export function fleetConfigurationOf(fleet: RowOf<'fleets', 'spec'>): FleetConfiguration {
  return fleetSpecColumn.decode(fleet.spec, fleet.id).configuration;
}

export function placementGroupConfigurationOf(
  group: RowOf<'placement_groups', 'configuration'>,
): PlacementGroupConfiguration {
  return placementGroupConfigurationColumn.decode(group.configuration, group.id);
}

export function placementGroupProvisioningDataOf(
  group: RowOf<'placement_groups', 'provisioning_data'>,
): PlacementGroupProvisioningData | null {
  return placementGroupProvisioningDataColumn.decodeNullable(group.provisioning_data, group.id);
}

export function volumeConfigurationOf(volume: RowOf<'volumes', 'configuration'>): VolumeConfiguration {
  return volumeConfigurationColumn.decode(volume.configuration, volume.id);
}

export function volumeProvisioningDataOf(
  volume: RowOf<'volumes', 'volume_provisioning_data'>,
): VolumeProvisioningData | null {
  return volumeProvisioningDataColumn.decodeNullable(volume.volume_provisioning_data, volume.id);
}

/** An attachment's data; the row is named by its volume and instance. */
export function volumeAttachmentDataOf(attachment: {
  volume_id: string;
  instance_id: string;
  attachment_data: string | null;
}): VolumeAttachmentData | null {
  return volumeAttachmentDataColumn.decodeNullable(
    attachment.attachment_data,
    `${attachment.volume_id}@${attachment.instance_id}`,
  );
}
