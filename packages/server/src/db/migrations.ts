/**
 * Versioned schema migrations, defined in code (no migration files to ship).
 * Applied at server start by `migrateToLatest`; Kysely's Migrator serialises
 * concurrent starts (a Postgres advisory lock; SQLite has one writer).
 */
import {
  type ColumnDataType,
  type Kysely,
  type Migration,
  type MigrationProvider,
  Migrator,
  PostgresAdapter,
  sql,
} from 'kysely';
import type { SqlDialect } from '../context.js';
import type { Database } from './schema.js';

/** Column types that differ between the dialects; everything else is `text`/`integer`. */
interface ColumnTypes {
  /** Milliseconds since the epoch: exceeds 32 bits, so BIGINT on Postgres. */
  time: ColumnDataType;
  real: ColumnDataType;
}

function columnTypes(dialect: SqlDialect): ColumnTypes {
  return dialect === 'postgres'
    ? { time: 'bigint', real: 'double precision' }
    : { time: 'integer', real: 'real' };
}

// biome-ignore lint/suspicious/noExplicitAny: migrations run against the schema of their time, not today's.
type AnyDatabase = Kysely<any>;

const PIPELINE_TABLES = ['runs', 'jobs', 'instances', 'fleets'] as const;

function initialMigration(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable('users')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('global_role', 'text', (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addColumn('active', 'integer', (c) => c.notNull().defaultTo(1))
        .execute();

      await db.schema
        .createTable('projects')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull().unique())
        .addColumn('owner_id', 'text', (c) => c.notNull())
        .addColumn('ssh_private_key', 'text', (c) => c.notNull())
        .addColumn('ssh_public_key', 'text', (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();

      await db.schema
        .createTable('members')
        .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('project_role', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('members_pkey', ['project_id', 'user_id'])
        .execute();
      await db.schema.createIndex('members_user_id_idx').on('members').column('user_id').execute();

      await db.schema
        .createTable('backends')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('config', 'text', (c) => c.notNull())
        .addColumn('auth', 'text', (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addUniqueConstraint('backends_project_id_type_key', ['project_id', 'type'])
        .execute();

      await db.schema
        .createTable('fleets')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('status_message', 'text')
        .addColumn('spec', 'text', (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addColumn('last_processed_at', t.time, (c) => c.notNull())
        .addColumn('auto_created', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('lock_expires_at', t.time)
        .addColumn('lock_token', 'text')
        .addColumn('lock_owner', 'text')
        .execute();
      await db.schema
        .createIndex('fleets_project_id_name_idx')
        .on('fleets')
        .columns(['project_id', 'name'])
        .execute();

      await db.schema
        .createTable('instances')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('fleet_id', 'text')
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('instance_num', 'integer', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('unreachable', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('termination_reason', 'text')
        .addColumn('termination_reason_message', 'text')
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addColumn('last_processed_at', t.time, (c) => c.notNull())
        .addColumn('started_at', t.time)
        .addColumn('finished_at', t.time)
        .addColumn('backend', 'text')
        .addColumn('region', 'text')
        .addColumn('price', t.real)
        .addColumn('offer', 'text')
        .addColumn('job_provisioning_data', 'text')
        .addColumn('requirements', 'text')
        .addColumn('instance_configuration', 'text')
        .addColumn('termination_idle_time', t.time)
        .addColumn('termination_deadline', t.time)
        .addColumn('provisioning_deadline', t.time)
        .addColumn('first_termination_retry_at', t.time)
        .addColumn('last_termination_retry_at', t.time)
        .addColumn('idle_since', t.time)
        .addColumn('total_blocks', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('busy_blocks', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('lock_expires_at', t.time)
        .addColumn('lock_token', 'text')
        .addColumn('lock_owner', 'text')
        .execute();
      await db.schema.createIndex('instances_fleet_id_idx').on('instances').column('fleet_id').execute();
      await db.schema.createIndex('instances_project_id_idx').on('instances').column('project_id').execute();

      await db.schema
        .createTable('runs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('run_name', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('termination_reason', 'text')
        .addColumn('run_spec', 'text', (c) => c.notNull())
        .addColumn('submitted_at', t.time, (c) => c.notNull())
        .addColumn('last_processed_at', t.time, (c) => c.notNull())
        .addColumn('resubmission_attempt', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_triggered_at', t.time)
        .addColumn('fleet_id', 'text')
        .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('lock_expires_at', t.time)
        .addColumn('lock_token', 'text')
        .addColumn('lock_owner', 'text')
        .execute();
      await db.schema
        .createIndex('runs_project_id_run_name_idx')
        .on('runs')
        .columns(['project_id', 'run_name'])
        .execute();

      await db.schema
        .createTable('jobs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('run_id', 'text', (c) => c.notNull())
        .addColumn('run_name', 'text', (c) => c.notNull())
        .addColumn('job_num', 'integer', (c) => c.notNull())
        .addColumn('replica_num', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('job_name', 'text', (c) => c.notNull())
        .addColumn('submission_num', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('termination_reason', 'text')
        .addColumn('termination_reason_message', 'text')
        .addColumn('exit_status', 'integer')
        .addColumn('job_spec_data', 'text', (c) => c.notNull())
        .addColumn('job_provisioning_data', 'text')
        .addColumn('job_runtime_data', 'text')
        .addColumn('instance_id', 'text')
        .addColumn('instance_assigned', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('submitted_at', t.time, (c) => c.notNull())
        .addColumn('last_processed_at', t.time, (c) => c.notNull())
        .addColumn('finished_at', t.time)
        .addColumn('runner_timestamp', t.time)
        .addColumn('remove_at', t.time)
        .addColumn('disconnected_at', t.time)
        .addColumn('lock_expires_at', t.time)
        .addColumn('lock_token', 'text')
        .addColumn('lock_owner', 'text')
        .execute();
      await db.schema.createIndex('jobs_run_id_idx').on('jobs').column('run_id').execute();
      await db.schema.createIndex('jobs_instance_id_idx').on('jobs').column('instance_id').execute();

      await db.schema
        .createTable('job_logs')
        .addColumn('id', dialect === 'postgres' ? 'bigserial' : 'integer', (c) =>
          dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
        )
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('run_id', 'text', (c) => c.notNull())
        .addColumn('job_id', 'text', (c) => c.notNull())
        .addColumn('timestamp', t.time, (c) => c.notNull())
        .addColumn('log_source', 'text', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('job_logs_job_id_timestamp_idx')
        .on('job_logs')
        .columns(['job_id', 'timestamp'])
        .execute();

      for (const table of PIPELINE_TABLES) {
        // The pipelines' claim query: unlocked (or expired) rows of some statuses, oldest processed first.
        await db.schema
          .createIndex(`${table}_pipeline_idx`)
          .on(table)
          .columns(['status', 'lock_expires_at', 'last_processed_at'])
          .execute();
      }
    },
  };
}

/**
 * The claim query asks for rows of some statuses with `last_processed_at <= due`.
 * The first pipeline index puts `lock_expires_at` between the two, so SQLite could
 * only seek on the status and then read every active row; with the time next to
 * the status it reads only the due ones.
 */
const pipelineDueIndexes: Migration = {
  async up(db: AnyDatabase) {
    for (const table of PIPELINE_TABLES) {
      await db.schema
        .createIndex(`${table}_status_due_idx`)
        .on(table)
        .columns(['status', 'last_processed_at'])
        .execute();
    }
  },
  async down(db: AnyDatabase) {
    for (const table of PIPELINE_TABLES) await db.schema.dropIndex(`${table}_status_due_idx`).execute();
  },
};

/**
 * SSH fleet hosts: how the server logs in to each host (encrypted, it holds the key) and
 * where the deploy left the shim, so deleting the fleet can stop it.
 */
const instanceRemoteConnection: Migration = {
  async up(db: AnyDatabase) {
    await db.schema.alterTable('instances').addColumn('remote_connection_info', 'text').execute();
  },
  async down(db: AnyDatabase) {
    await db.schema.alterTable('instances').dropColumn('remote_connection_info').execute();
  },
};

/**
 * Log reads go by job: the jobs of a run (one seek each) and each job's rows past its own
 * cursor (logs/log-cursor.ts says why per job).
 */
const jobLogsByRunAndJob: Migration = {
  async up(db: AnyDatabase) {
    await db.schema
      .createIndex('job_logs_run_id_job_id_id_idx')
      .on('job_logs')
      .columns(['run_id', 'job_id', 'id'])
      .execute();
  },
  async down(db: AnyDatabase) {
    await db.schema.dropIndex('job_logs_run_id_job_id_id_idx').execute();
  },
};

/**
 * A dev environment's seconds without an SSH connection, as its runner last reported them
 * (dstack's `jobs.inactivity_secs`); null for jobs that have no `inactivity_duration`.
 */
const jobInactivitySecs: Migration = {
  async up(db: AnyDatabase) {
    await db.schema.alterTable('jobs').addColumn('inactivity_secs', 'integer').execute();
  },
  async down(db: AnyDatabase) {
    await db.schema.alterTable('jobs').dropColumn('inactivity_secs').execute();
  },
};

/**
 * Each instance's agent token (encrypted): the shim or runner its launch started answers only
 * requests that carry it. Null on rows written before: their agents were started without one.
 */
const instanceAgentToken: Migration = {
  async up(db: AnyDatabase) {
    await db.schema.alterTable('instances').addColumn('agent_token', 'text').execute();
  },
  async down(db: AnyDatabase) {
    await db.schema.alterTable('instances').dropColumn('agent_token').execute();
  },
};

/** The admin's token kept encrypted (`users.token_encrypted`), to print it at every start. */
const adminTokenKept: Migration = {
  async up(db: AnyDatabase) {
    await db.schema.alterTable('users').addColumn('token_encrypted', 'text').execute();
  },
  async down(db: AnyDatabase) {
    await db.schema.alterTable('users').dropColumn('token_encrypted').execute();
  },
};

/**
 * A job's log entries are keyed by their runner position: storing inserts with ON CONFLICT DO
 * NOTHING, so a batch two replicas pulled (or one pulled again after a failover) is kept once.
 * Older rows have no position (NULLs never conflict).
 */
function jobLogsPositionKey(dialect: SqlDialect): Migration {
  return {
    async up(db: AnyDatabase) {
      await db.schema.alterTable('job_logs').addColumn('position', columnTypes(dialect).time).execute();
      await db.schema
        .createIndex('job_logs_job_id_position_key')
        .unique()
        .on('job_logs')
        .columns(['job_id', 'position'])
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropIndex('job_logs_job_id_position_key').execute();
      await db.schema.alterTable('job_logs').dropColumn('position').execute();
    },
  };
}

/**
 * Project secrets (`dstack secret set`): the value is encrypted with the server's encryption
 * (`app.encryption`), the name unique per project.
 */
function projectSecrets(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable('secrets')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addColumn('updated_at', t.time, (c) => c.notNull())
        .addUniqueConstraint('secrets_project_id_name_key', ['project_id', 'name'])
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropTable('secrets').execute();
    },
  };
}

/**
 * Repos, their credentials and uploaded code, and file archives (dstack's `repos`, `repo_creds`,
 * `codes`, `file_archives`). Blobs are stored in the database, keyed by their sha256, once each.
 */
function reposAndCode(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  const blob = dialect === 'postgres' ? 'bytea' : 'blob';
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable('repos')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('info', 'text', (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addUniqueConstraint('repos_project_id_name_key', ['project_id', 'name'])
        .execute();
      await db.schema
        .createTable('repo_creds')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('repo_id', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('creds', 'text', (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addUniqueConstraint('repo_creds_repo_id_user_id_key', ['repo_id', 'user_id'])
        .execute();
      await db.schema
        .createTable('codes')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('repo_id', 'text', (c) => c.notNull())
        .addColumn('blob_hash', 'text', (c) => c.notNull())
        .addColumn('blob', blob, (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addUniqueConstraint('codes_repo_id_blob_hash_key', ['repo_id', 'blob_hash'])
        .execute();
      await db.schema
        .createTable('file_archives')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('blob_hash', 'text', (c) => c.notNull())
        .addColumn('blob', blob, (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addUniqueConstraint('file_archives_user_id_blob_hash_key', ['user_id', 'blob_hash'])
        .execute();
    },
    async down(db: AnyDatabase) {
      for (const table of ['file_archives', 'codes', 'repo_creds', 'repos']) {
        await db.schema.dropTable(table).execute();
      }
    },
  };
}

/** Cluster fleets' placement groups at their backends (dstack's `placement_groups`). */
function placementGroups(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable('placement_groups')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('fleet_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('configuration', 'text', (c) => c.notNull())
        .addColumn('provisioning_data', 'text')
        .addColumn('fleet_deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', t.time, (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('placement_groups_fleet_id_idx')
        .on('placement_groups')
        .columns(['fleet_id', 'deleted'])
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropTable('placement_groups').execute();
    },
  };
}

/**
 * Samples of running jobs' resource use (dstack's `job_metrics_points`): CPU time and memory as
 * the runner measured them, and per-GPU figures as JSON lists (null: the GPUs could not be read).
 */
function jobMetricsPoints(dialect: SqlDialect): Migration {
  const big = dialect === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable('job_metrics_points')
        .addColumn('id', dialect === 'postgres' ? 'bigserial' : 'integer', (c) =>
          dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
        )
        .addColumn('job_id', 'text', (c) => c.notNull())
        .addColumn('timestamp_micro', big, (c) => c.notNull())
        .addColumn('cpu_usage_micro', big, (c) => c.notNull())
        .addColumn('memory_usage_bytes', big, (c) => c.notNull())
        .addColumn('memory_working_set_bytes', big, (c) => c.notNull())
        .addColumn('gpus_memory_usage_bytes', 'text')
        .addColumn('gpus_util_percent', 'text')
        .execute();
      await db.schema
        .createIndex('job_metrics_points_job_id_timestamp_idx')
        .on('job_metrics_points')
        .columns(['job_id', 'timestamp_micro'])
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropTable('job_metrics_points').execute();
    },
  };
}

/**
 * Network volumes (dstack's `volumes`, a pipeline table) and which instance each is attached to
 * for which job (`volume_attachments`, dstack's `volumes_attachments`).
 */
function volumes(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable('volumes')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('status_message', 'text')
        .addColumn('configuration', 'text', (c) => c.notNull())
        .addColumn('volume_provisioning_data', 'text')
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addColumn('last_processed_at', t.time, (c) => c.notNull())
        .addColumn('last_job_processed_at', t.time)
        .addColumn('to_be_deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('deleted_at', t.time)
        .addColumn('lock_expires_at', t.time)
        .addColumn('lock_token', 'text')
        .addColumn('lock_owner', 'text')
        .execute();
      await db.schema
        .createIndex('volumes_project_id_name_idx')
        .on('volumes')
        .columns(['project_id', 'name'])
        .execute();
      await db.schema
        .createIndex('volumes_status_due_idx')
        .on('volumes')
        .columns(['status', 'last_processed_at'])
        .execute();
      await db.schema
        .createTable('volume_attachments')
        .addColumn('volume_id', 'text', (c) => c.notNull())
        .addColumn('instance_id', 'text', (c) => c.notNull())
        .addColumn('job_id', 'text')
        .addColumn('attachment_data', 'text')
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addColumn('detach_requested_at', t.time)
        .addPrimaryKeyConstraint('volume_attachments_pkey', ['volume_id', 'instance_id'])
        .execute();
      await db.schema
        .createIndex('volume_attachments_instance_id_idx')
        .on('volume_attachments')
        .column('instance_id')
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropTable('volume_attachments').execute();
      await db.schema.dropTable('volumes').execute();
    },
  };
}

/**
 * Service replicas (dstack's `deployment_num`, `desired_replica_count`): the run's deployment
 * (bumped when a changed service is applied again) and how many replicas the autoscaler wants,
 * with when it last changed its mind; each job's deployment and whether its probes pass.
 */
function serviceReplicas(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .alterTable('runs')
        .addColumn('deployment_num', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('runs')
        .addColumn('desired_replica_count', 'integer', (c) => c.notNull().defaultTo(1))
        .execute();
      await db.schema.alterTable('runs').addColumn('last_scaled_at', t.time).execute();
      await db.schema
        .alterTable('jobs')
        .addColumn('deployment_num', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('jobs')
        .addColumn('probes_ready', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
    async down(db: AnyDatabase) {
      for (const column of ['deployment_num', 'desired_replica_count', 'last_scaled_at']) {
        await db.schema.alterTable('runs').dropColumn(column).execute();
      }
      for (const column of ['deployment_num', 'probes_ready']) {
        await db.schema.alterTable('jobs').dropColumn(column).execute();
      }
    },
  };
}

/**
 * Replica groups (dstack's `desired_replica_counts`): how many replicas the autoscaler wants in
 * each group of a service, by group name, as JSON; null for a run that has not scaled by group yet.
 */
const replicaGroupCounts: Migration = {
  async up(db: AnyDatabase) {
    await db.schema.alterTable('runs').addColumn('desired_replica_counts', 'text').execute();
  },
  async down(db: AnyDatabase) {
    await db.schema.alterTable('runs').dropColumn('desired_replica_counts').execute();
  },
};

/** Whether a gateway's service is reached over HTTPS, decided at apply (`https: auto` reads the gateway's certificate). */
const serviceHttps: Migration = {
  async up(db: AnyDatabase) {
    await db.schema.alterTable('runs').addColumn('service_https', 'integer').execute();
  },
  async down(db: AnyDatabase) {
    await db.schema.alterTable('runs').dropColumn('service_https').execute();
  },
};

/**
 * Each run's `priority` (dstack's `runs.priority`, 0–100, default 0), a column so that the jobs
 * waiting for capacity are ordered by it without reading every run's spec.
 */
const runPriority: Migration = {
  async up(db: AnyDatabase) {
    await db.schema
      .alterTable('runs')
      .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
  },
  async down(db: AnyDatabase) {
    await db.schema.alterTable('runs').dropColumn('priority').execute();
  },
};

/**
 * Each gateway's agent token (encrypted): its agent's management API answers only requests that
 * carry it. Null on rows written before: their agents were started without one.
 */
const gatewayAgentToken: Migration = {
  async up(db: AnyDatabase) {
    await db.schema.alterTable('gateways').addColumn('agent_token', 'text').execute();
  },
  async down(db: AnyDatabase) {
    await db.schema.alterTable('gateways').dropColumn('agent_token').execute();
  },
};

/** dstack's `events` and `event_targets`: what happened, by whom, to what. */
function eventTables(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable('events')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('recorded_at', t.time, (c) => c.notNull())
        // No foreign key: users are deleted for good, and their events stay with the name they had.
        .addColumn('actor_user_id', 'text')
        .addColumn('actor_user_name', 'text')
        .execute();
      await db.schema
        .createIndex('events_recorded_at_idx')
        .on('events')
        .columns(['recorded_at', 'id'])
        .execute();
      await db.schema.createIndex('events_actor_user_id_idx').on('events').column('actor_user_id').execute();
      await db.schema
        .createTable('event_targets')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
        .addColumn('entity_type', 'text', (c) => c.notNull())
        .addColumn('entity_project_id', 'text', (c) => c.references('projects.id').onDelete('cascade'))
        .addColumn('entity_run_id', 'text')
        .addColumn('entity_fleet_id', 'text')
        .addColumn('entity_id', 'text', (c) => c.notNull())
        .addColumn('entity_name', 'text', (c) => c.notNull())
        .execute();
      const indexes: Record<string, string[]> = {
        event_targets_event_id_idx: ['event_id'],
        event_targets_entity_idx: ['entity_type', 'entity_id'],
        event_targets_entity_project_id_idx: ['entity_project_id'],
        event_targets_entity_run_id_idx: ['entity_run_id'],
        event_targets_entity_fleet_id_idx: ['entity_fleet_id'],
      };
      for (const [name, columns] of Object.entries(indexes)) {
        await db.schema.createIndex(name).on('event_targets').columns(columns).execute();
      }
    },
    async down(db: AnyDatabase) {
      await db.schema.dropTable('event_targets').execute();
      await db.schema.dropTable('events').execute();
    },
  };
}

/**
 * Users' own SSH key pairs, as dstack keeps them: dstack's clients take the pair from
 * `users/get_my_user` and log in to jobs with it (the private half encrypted at rest; users made
 * before get theirs at their first `get_my_user`); and the public keys users add.
 */
function userSshKeys(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDatabase) {
      await db.schema.alterTable('users').addColumn('ssh_public_key', 'text').execute();
      await db.schema.alterTable('users').addColumn('ssh_private_key', 'text').execute();
      // More keys a user may log in to jobs with (dstack's `user_public_keys`).
      await db.schema
        .createTable('user_public_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('fingerprint', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addUniqueConstraint('user_public_keys_user_id_fingerprint_key', ['user_id', 'fingerprint'])
        .execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.dropTable('user_public_keys').execute();
      await db.schema.alterTable('users').dropColumn('ssh_private_key').execute();
      await db.schema.alterTable('users').dropColumn('ssh_public_key').execute();
    },
  };
}

/** Every migration, by name; names sort in application order. */

export function getMigrations(dialect: SqlDialect): Record<string, Migration> {
  return {
    '001_initial': initialMigration(dialect),
    '002_pipeline_due_indexes': pipelineDueIndexes,
    '003_instance_remote_connection': instanceRemoteConnection,
    '004_job_logs_run_job_index': jobLogsByRunAndJob,
    '005_job_inactivity_secs': jobInactivitySecs,
    '006_instance_agent_token': instanceAgentToken,
    '007_job_logs_position_key': jobLogsPositionKey(dialect),
    '008_secrets': projectSecrets(dialect),
    '009_repos_and_code': reposAndCode(dialect),
    '010_admin_token_kept': adminTokenKept,
    '011_placement_groups': placementGroups(dialect),
    '012_volumes': volumes(dialect),
    '013_service_replicas': serviceReplicas(dialect),
    '014_replica_group_counts': replicaGroupCounts,
    '015_job_metrics_points': jobMetricsPoints(dialect),
    '016_gateways': gateways(dialect),
    '017_events': eventTables(dialect),
    '018_user_ssh_keys': userSshKeys(dialect),
    '019_service_https': serviceHttps,
    '020_gateway_agent_token': gatewayAgentToken,
    '021_run_priority': runPriority,
  };
}

function gateways(dialect: SqlDialect): Migration {
  const t = columnTypes(dialect);
  return {
    async up(db: AnyDatabase) {
      await db.schema
        .createTable('gateways')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('project_id', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('status_message', 'text')
        .addColumn('configuration', 'text', (c) => c.notNull())
        .addColumn('certificate_private_key', 'text')
        .addColumn('wildcard_domain', 'text')
        .addColumn('is_default', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('provisioning_data', 'text')
        .addColumn('created_at', t.time, (c) => c.notNull())
        .addColumn('last_processed_at', t.time, (c) => c.notNull())
        .addColumn('to_be_deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('deleted', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('deleted_at', t.time)
        .addColumn('lock_expires_at', t.time)
        .addColumn('lock_token', 'text')
        .addColumn('lock_owner', 'text')
        .execute();
      await db.schema
        .createIndex('gateways_project_id_name_idx')
        .on('gateways')
        .columns(['project_id', 'name'])
        .execute();
      await db.schema
        .createIndex('gateways_status_due_idx')
        .on('gateways')
        .columns(['status', 'last_processed_at'])
        .execute();
      await db.schema.alterTable('runs').addColumn('gateway_id', 'text').execute();
      await db.schema.alterTable('runs').addColumn('service_hostname', 'text').execute();
    },
    async down(db: AnyDatabase) {
      await db.schema.alterTable('runs').dropColumn('service_hostname').execute();
      await db.schema.alterTable('runs').dropColumn('gateway_id').execute();
      await db.schema.dropTable('gateways').execute();
    },
  };
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
