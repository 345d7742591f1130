/**
 * Versioned schema migrations, defined in code (no migration files to ship), one module per
 * migration named by its id. Applied at server start by `migrateToLatest`; Kysely's Migrator
 * serialises concurrent starts (a Postgres advisory lock; SQLite has one writer).
 *
 * To add one: a module `NNN-what-it-does.ts` whose default export is a `MigrationFactory`
 * (`addColumns({ table: [...] })` when it only adds columns), and its line at the end of
 * `MIGRATIONS`. The names are stored in each database's `kysely_migration`: never rename or
 * change a migration that has shipped (`migrations-unchanged.test.ts` holds them to it).
 */
import { type Kysely, type Migration, type MigrationProvider, Migrator, PostgresAdapter, sql } from 'kysely';
import type { SqlDialect } from '../../context.js';
import type { Database } from '../schema.js';
import m001Initial from './001-initial.js';
import m002PipelineDueIndexes from './002-pipeline-due-indexes.js';
import m003InstanceRemoteConnection from './003-instance-remote-connection.js';
import m004JobLogsRunJobIndex from './004-job-logs-run-job-index.js';
import m005JobInactivitySecs from './005-job-inactivity-secs.js';
import m006InstanceAgentToken from './006-instance-agent-token.js';
import m007JobLogsPositionKey from './007-job-logs-position-key.js';
import m008Secrets from './008-secrets.js';
import m009ReposAndCode from './009-repos-and-code.js';
import m010AdminTokenKept from './010-admin-token-kept.js';
import m011PlacementGroups from './011-placement-groups.js';
import m012Volumes from './012-volumes.js';
import m013ServiceReplicas from './013-service-replicas.js';
import m014ReplicaGroupCounts from './014-replica-group-counts.js';
import m015JobMetricsPoints from './015-job-metrics-points.js';
import m016Gateways from './016-gateways.js';
import m017Events from './017-events.js';
import m018UserSshKeys from './018-user-ssh-keys.js';
import m019ServiceHttps from './019-service-https.js';
import m020GatewayAgentToken from './020-gateway-agent-token.js';
import m021RunPriority from './021-run-priority.js';
import m022RunsListIndex from './022-runs-list-index.js';
import m023SchedulerIndexes from './023-scheduler-indexes.js';
import m024TakeableInstancesIndex from './024-takeable-instances-index.js';
import type { MigrationFactory } from './migration-helpers.js';

/** Every migration, by name; names sort in application order. */
const MIGRATIONS: Record<string, MigrationFactory> = {
  '001_initial': m001Initial,
  '002_pipeline_due_indexes': m002PipelineDueIndexes,
  '003_instance_remote_connection': m003InstanceRemoteConnection,
  '004_job_logs_run_job_index': m004JobLogsRunJobIndex,
  '005_job_inactivity_secs': m005JobInactivitySecs,
  '006_instance_agent_token': m006InstanceAgentToken,
  '007_job_logs_position_key': m007JobLogsPositionKey,
  '008_secrets': m008Secrets,
  '009_repos_and_code': m009ReposAndCode,
  '010_admin_token_kept': m010AdminTokenKept,
  '011_placement_groups': m011PlacementGroups,
  '012_volumes': m012Volumes,
  '013_service_replicas': m013ServiceReplicas,
  '014_replica_group_counts': m014ReplicaGroupCounts,
  '015_job_metrics_points': m015JobMetricsPoints,
  '016_gateways': m016Gateways,
  '017_events': m017Events,
  '018_user_ssh_keys': m018UserSshKeys,
  '019_service_https': m019ServiceHttps,
  '020_gateway_agent_token': m020GatewayAgentToken,
  '021_run_priority': m021RunPriority,
  '022_runs_list_index': m022RunsListIndex,
  '023_scheduler_indexes': m023SchedulerIndexes,
  '024_takeable_instances_index': m024TakeableInstancesIndex,
};

export function getMigrations(dialect: SqlDialect): Record<string, Migration> {
  return Object.fromEntries(
    Object.entries(MIGRATIONS).map(([name, migration]) => [name, migration(dialect)]),
  );
}

/** The dialect of an open database, from its Kysely adapter. */
export function detectDialect(db: Kysely<Database>): SqlDialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

class InCodeMigrationProvider implements MigrationProvider {
  constructor(private readonly dialect: SqlDialect) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    return getMigrations(this.dialect);
  }
}

/**
 * Applies the pending migrations. Safe to call from several processes at once:
 * Postgres serialises them with an advisory lock, SQLite with its write lock.
 * Returns the names of the migrations it applied; throws the first migration error.
 */
export async function migrateToLatest(
  db: Kysely<Database>,
  dialect: SqlDialect = detectDialect(db),
): Promise<string[]> {
  // Kysely looks for its own tables in every schema unless told which one; with one
  // schema per test suite (or per deployment) it must be the connection's own.
  const migrationTableSchema =
    dialect === 'postgres'
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
      : undefined;
  const migrator = new Migrator({
    db,
    provider: new InCodeMigrationProvider(dialect),
    ...(migrationTableSchema ? { migrationTableSchema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((result) => result.status === 'Error');
    const where = failed ? ` (migration ${failed.migrationName})` : '';
    throw new Error(`Database migration failed${where}: ${(error as Error).message ?? String(error)}`, {
      cause: error,
    });
  }
  return (results ?? [])
    .filter((result) => result.status === 'Success')
    .map((result) => result.migrationName);
}
