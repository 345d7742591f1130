/**
 * The database tables, as Kysely types. Both dialects store the same values:
 * ids are UUID strings, times are integer milliseconds since the epoch (so
 * comparisons and ordering work alike on SQLite and Postgres), booleans are
 * 0/1 integers, and JSON documents are text, written and read through their
 * column's codec in json-columns.ts (core's schema decodes them where rows are read).
 */
import type {
  EventTargetType,
  FleetStatus,
  GatewayStatus,
  InstanceStatus,
  InstanceTerminationReason,
  JobStatus,
  JobTerminationReason,
  RunStatus,
  RunTerminationReason,
  VolumeStatus,
} from '@dstack/core';
import type { Generated } from 'kysely';

/** Lock columns of every table a pipeline processes (dstack's PIPELINES.md design). */
export interface LockColumns {
  /** When the current claim expires (ms); null when unclaimed. */
  lock_expires_at: number | null;
  /** Random token of the current claim; results are applied only while it matches. */
  lock_token: string | null;
  /** Which server process holds the claim (`host:pid:boot-id`), for debugging. */
  lock_owner: string | null;
}

export interface UsersTable {
  id: string;
  name: string;
  /** sha256 hex of the bearer token, which requests are authenticated by. */
  token_hash: string;
  /**
   * The `admin` user's token itself, encrypted like other secrets at rest, so that every start of
   * the server can print it (as dstack does); null for every other user, whose token is only a hash.
   */
  token_encrypted?: string | null;
  global_role: 'admin' | 'user';
  created_at: number;
  active: number;
  /** The user's own SSH key (dstack's): the authorized_keys line; null until first generated. */
  ssh_public_key?: string | null;
  /** Its private half (OpenSSH format), encrypted like other secrets at rest. */
  ssh_private_key?: string | null;
}

export interface ProjectsTable {
  id: string;
  name: string;
  owner_id: string;
  /** OpenSSH private key the server uses for all SSH to this project's instances (encrypted when a key is configured). */
  ssh_private_key: string;
  ssh_public_key: string;
  created_at: number;
  deleted: number;
}

export interface MembersTable {
  project_id: string;
  user_id: string;
  project_role: 'admin' | 'manager' | 'user';
}

export interface BackendsTable {
  id: string;
  project_id: string;
  type: string;
  /** The stored config (no creds), JSON. */
  config: string;
  /** The creds, JSON, encrypted (`enc:{aes|identity}:{key}:{ciphertext}`). */
  auth: string;
  created_at: number;
}

export interface FleetsTable extends LockColumns {
  id: string;
  project_id: string;
  name: string;
  status: FleetStatus;
  status_message: string | null;
  /** `{configuration}` JSON (`fleetSpecColumn`). */
  spec: string;
  created_at: number;
  last_processed_at: number;
  /** Set by the server for fleets it made itself (the local backend's default fleet, run-made fleets). */
  auto_created: number;
  deleted: number;
}

export interface InstancesTable extends LockColumns {
  id: string;
  project_id: string;
  fleet_id: string | null;
  name: string;
  instance_num: number;
  status: InstanceStatus;
  unreachable: number;
  termination_reason: InstanceTerminationReason | null;
  termination_reason_message: string | null;
  created_at: number;
  last_processed_at: number;
  started_at: number | null;
  finished_at: number | null;
  backend: string | null;
  region: string | null;
  price: number | null;
  /** InstanceOfferWithAvailability JSON (`instanceOfferColumn`). */
  offer: string | null;
  /** JobProvisioningData JSON (`instanceProvisioningDataColumn`). */
  job_provisioning_data: string | null;
  /** Requirements JSON, for instances created for a fleet (`instanceRequirementsColumn`). */
  requirements: string | null;
  /** InstanceConfiguration JSON (`instanceConfigurationColumn`). */
  instance_configuration: string | null;
  /** Seconds an idle instance is kept; null = forever. */
  termination_idle_time: number | null;
  /** When an unreachable instance is given up (ms). */
  termination_deadline: number | null;
  /** When provisioning must have finished (ms). */
  provisioning_deadline: number | null;
  first_termination_retry_at: number | null;
  last_termination_retry_at: number | null;
  /** When the instance last became idle (ms), for `idle_duration`. */
  idle_since: number | null;
  total_blocks: number;
  busy_blocks: number;
  deleted: number;
  /**
   * An SSH fleet host's `RemoteConnectionInfo` JSON, encrypted (it holds the private key);
   * null for cloud instances. Optional so rows written before the column existed still type.
   */
  remote_connection_info?: string | null;
  /**
   * The token the instance's agents require (`Authorization: Bearer`), encrypted; chosen when
   * the row is made and handed to the backend with the launch. Null on rows written before
   * agents had tokens. Optional so rows written before the column existed still type.
   */
  agent_token?: string | null;
}

export interface RunsTable extends LockColumns {
  id: string;
  project_id: string;
  user_id: string;
  run_name: string;
  status: RunStatus;
  termination_reason: RunTerminationReason | null;
  /** RunSpec JSON, its configuration validated and defaults applied (`runSpecColumn`). */
  run_spec: string;
  submitted_at: number;
  last_processed_at: number;
  resubmission_attempt: number;
  /** When a pending run is resubmitted (retry backoff), ms. */
  next_triggered_at: number | null;
  fleet_id: string | null;
  deleted: number;
  /** The run's `priority` (0–100): jobs waiting for capacity are provisioned highest first (run-priority.ts). */
  priority?: number;
  /** A service's deployment, bumped when a changed service is applied again (rolling update). */
  deployment_num?: number;
  /** How many replicas a service should have now (its autoscaler's last decision). */
  desired_replica_count?: number;
  /** When the autoscaler last changed `desired_replica_count` (ms); null before. */
  last_scaled_at?: number | null;
  /** How many replicas each replica group should have (JSON: group name → count); null before the first pass. */
  desired_replica_counts?: string | null;
  /** The gateway a service is published on (`gateways.id`); null: the server's own proxy. */
  gateway_id?: string | null;
  /** The service's host name on its gateway (`{run}.{wildcard_domain}`), fixed at apply. */
  service_hostname?: string | null;
  /**
   * Whether the service's URL on its gateway is `https://` (1) or `http://` (0), fixed at apply
   * (dstack's `_should_show_service_https`: `https: auto` follows the gateway's certificate); null
   * off a gateway, and for rows from before it was kept (their `https` then decides).
   */
  service_https?: number | null;
}

export interface JobsTable extends LockColumns {
  id: string;
  project_id: string;
  run_id: string;
  run_name: string;
  job_num: number;
  replica_num: number;
  job_name: string;
  submission_num: number;
  status: JobStatus;
  termination_reason: JobTerminationReason | null;
  termination_reason_message: string | null;
  exit_status: number | null;
  /** JobSpec JSON (`jobSpecColumn`). */
  job_spec_data: string;
  /** JobProvisioningData JSON (`jobProvisioningDataColumn`). */
  job_provisioning_data: string | null;
  /** JobRuntimeData JSON (`jobRuntimeDataColumn`). */
  job_runtime_data: string | null;
  instance_id: string | null;
  instance_assigned: number;
  submitted_at: number;
  last_processed_at: number;
  finished_at: number | null;
  /** The runner's `last_updated` of the last pull (ms), the next pull's `timestamp`. */
  runner_timestamp: number | null;
  /** Graceful stop: when to stop waiting for the runner (ms). */
  remove_at: number | null;
  /** Since when the job's agent has not answered (ms). */
  disconnected_at: number | null;
  /** Seconds without an SSH connection at the last pull, for a job with `inactivity_duration`; else null. */
  inactivity_secs: number | null;
  /** The service deployment this job runs (`runs.deployment_num` when it was submitted). */
  deployment_num?: number;
  /** 1 once every probe of the service has passed `ready_after` times in a row, else 0. */
  probes_ready?: number;
}

export interface JobLogsTable {
  id: Generated<number>;
  project_id: string;
  run_id: string;
  job_id: string;
  /** ms since the epoch, as the runner reported it. */
  timestamp: number;
  log_source: 'stdout' | 'stderr' | 'runner';
  /** Base64 of the bytes. */
  message: string;
  /**
   * The entry's position in the job's log, as the runner numbered it: unique per job, so a batch
   * pulled twice (two replicas, a failover) is stored once. Null for rows of runners without it.
   */
  position?: number | null;
}

/** A public key a user added (dstack's `user_public_keys`): it logs in to the user's jobs too. */
export interface UserPublicKeysTable {
  id: string;
  user_id: string;
  name: string;
  /** The key type, e.g. `ssh-ed25519`. */
  type: string;
  /** OpenSSH's `SHA256:…` fingerprint; unique per user. */
  fingerprint: string;
  /** The authorized_keys line as added. */
  key: string;
  created_at: number;
}

export interface SecretsTable {
  id: string;
  project_id: string;
  /** Unique per project; follows `SECRET_NAME_PATTERN` of @dstack/core. */
  name: string;
  /** The value, encrypted (`enc:{aes|identity}:{key}:{ciphertext}`); read it through `app.encryption`. */
  value: string;
  created_at: number;
  updated_at: number;
}

/** A repo runs take their code from (`repos/init`), by its client-given id, unique per project. */
export interface ReposTable {
  id: string;
  project_id: string;
  /** The client's `repo_id`. */
  name: string;
  type: 'remote' | 'local' | 'virtual';
  /** RepoInfo JSON (`repoInfoColumn`). */
  info: string;
  created_at: number;
}

/** How a user's runs reach a remote repo: RemoteRepoCreds JSON, encrypted (it may hold a key or token). */
export interface RepoCredsTable {
  id: string;
  repo_id: string;
  user_id: string;
  creds: string;
  created_at: number;
}

/** Uploaded code of a repo (a diff or an archive), stored once per content: `blob_hash` is its sha256. */
export interface CodesTable {
  id: string;
  repo_id: string;
  blob_hash: string;
  blob: Uint8Array;
  created_at: number;
}

/** A user's uploaded file archive (`files:`), stored once per content: `blob_hash` is its sha256. */
export interface FileArchivesTable {
  id: string;
  user_id: string;
  blob_hash: string;
  blob: Uint8Array;
  created_at: number;
}

/**
 * A cluster fleet's placement group at its backend (dstack's `placement_groups`): made when the
 * fleet's first instance launches on a backend with the `placement-groups` capability, deleted
 * at the backend (then marked `deleted`) once the fleet has ended or the group went unused.
 */
export interface PlacementGroupsTable {
  id: string;
  project_id: string;
  fleet_id: string;
  /** The group's name at the backend (`generateUniquePlacementGroupName`). */
  name: string;
  /** `PlacementGroupConfiguration` JSON (`placementGroupConfigurationColumn`): backend, region, strategy. */
  configuration: string;
  /** `PlacementGroupProvisioningData` JSON, what the backend answered (`placementGroupProvisioningDataColumn`). */
  provisioning_data: string | null;
  /** Set when the group is to go: its fleet ended, or the master launched in another group. */
  fleet_deleted: number;
  /** Set once the backend deleted it. */
  deleted: number;
  created_at: number;
}

/** A network volume (dstack's `volumes`): created (`size`) or registered (`volume_id`) by its pipeline. */
export interface VolumesTable extends LockColumns {
  id: string;
  project_id: string;
  user_id: string;
  /** Unique per project among the volumes not deleted. */
  name: string;
  status: VolumeStatus;
  status_message: string | null;
  /** The validated `type: volume` configuration, JSON (`volumeConfigurationColumn`). */
  configuration: string;
  /** VolumeProvisioningData JSON once created or registered (`volumeProvisioningDataColumn`). */
  volume_provisioning_data: string | null;
  created_at: number;
  last_processed_at: number;
  /** When a job last attached or detached it (ms): `auto_cleanup_duration` counts from there. */
  last_job_processed_at: number | null;
  /** Deletion asked for (`volumes/delete`, auto cleanup): hidden, never attached, deleted at the provider by its pipeline. */
  to_be_deleted: number;
  deleted: number;
  deleted_at: number | null;
}

/** A volume attached to an instance for a job (dstack's `volumes_attachments`, with the job that needs it). */
export interface VolumeAttachmentsTable {
  volume_id: string;
  instance_id: string;
  /** The job the volume was attached for; null when that job is gone. */
  job_id: string | null;
  /** VolumeAttachmentData JSON (`volumeAttachmentDataColumn`). */
  attachment_data: string | null;
  created_at: number;
  /** When the first detach was asked (ms): a detach that does not finish is forced after a while. */
  detach_requested_at: number | null;
}

/** One sample of a job's resource use, as its runner measured it (dstack's `job_metrics_points`). */
export interface JobMetricsPointsTable {
  id: Generated<number>;
  job_id: string;
  /** When the runner measured, µs since the epoch. */
  timestamp_micro: number;
  /** CPU time the job used so far, µs (a rate needs two samples). */
  cpu_usage_micro: number;
  memory_usage_bytes: number;
  memory_working_set_bytes: number;
  /** JSON list of bytes per GPU; null when the GPUs could not be read. */
  gpus_memory_usage_bytes: string | null;
  /** JSON list of percents per GPU; null when the GPUs could not be read. */
  gpus_util_percent: string | null;
}

/**
 * A gateway (dstack's `gateways` with its one `gateway_computes` row folded in): an instance that
 * publishes the project's services at `https://{run}.{wildcard_domain}`. Gone rows stay `deleted`.
 */
export interface GatewaysTable extends LockColumns {
  id: string;
  project_id: string;
  user_id: string;
  /** Unique per project among the gateways not deleted. */
  name: string;
  status: GatewayStatus;
  status_message: string | null;
  /** The validated `type: gateway` configuration, JSON (`gatewayConfigurationColumn`); a custom certificate's key redacted. */
  configuration: string;
  /** A custom certificate's private key (PEM), encrypted; null for other certificates. */
  certificate_private_key: string | null;
  /**
   * The token the gateway's agent requires on its management API, encrypted; chosen when the
   * gateway is created. Null for a gateway launched before gateways had tokens (its agent requires none).
   */
  agent_token: string | null;
  wildcard_domain: string | null;
  /** 1 for the project's default gateway (at most one per project). */
  is_default: number;
  /** GatewayReplicaProvisioningData JSON once launched (`gatewayProvisioningDataColumn`). */
  provisioning_data: string | null;
  created_at: number;
  last_processed_at: number;
  /** Deletion asked for: hidden, its instance terminated by its pipeline. */
  to_be_deleted: number;
  deleted: number;
  deleted_at: number | null;
}

/**
 * Something that happened (dstack's `events`): a status change, a creation or a deletion, with
 * who did it. Kept for `events.ttl_seconds` (`events/event-retention.ts`).
 */
export interface EventsTable {
  id: string;
  /** Past tense, without the targets' or the actor's names: "Run status changed SUBMITTED -> PROVISIONING". */
  message: string;
  /** ms; strictly increasing within one server process, so one transaction's events keep their order. */
  recorded_at: number;
  /** The user who acted; null for the system (a pipeline's transition). The user may be deleted since. */
  actor_user_id: string | null;
  /** The acting user's name when the event was recorded, shown once the user is deleted. */
  actor_user_name: string | null;
}

/** What an event is about (dstack's `event_targets`), with the ancestors the `within_*` filters look for. */
export interface EventTargetsTable {
  id: string;
  event_id: string;
  entity_type: EventTargetType;
  /** The target's project; null for users. */
  entity_project_id: string | null;
  /** The run of a run or job target. */
  entity_run_id: string | null;
  /** The fleet of a fleet or instance target. */
  entity_fleet_id: string | null;
  entity_id: string;
  /** The target's name when the event was recorded. */
  entity_name: string;
}

export interface Database {
  users: UsersTable;
  user_public_keys: UserPublicKeysTable;
  projects: ProjectsTable;
  members: MembersTable;
  backends: BackendsTable;
  fleets: FleetsTable;
  instances: InstancesTable;
  runs: RunsTable;
  jobs: JobsTable;
  job_logs: JobLogsTable;
  job_metrics_points: JobMetricsPointsTable;
  secrets: SecretsTable;
  repos: ReposTable;
  repo_creds: RepoCredsTable;
  codes: CodesTable;
  file_archives: FileArchivesTable;
  placement_groups: PlacementGroupsTable;
  volumes: VolumesTable;
  gateways: GatewaysTable;
  volume_attachments: VolumeAttachmentsTable;
  events: EventsTable;
  event_targets: EventTargetsTable;
}
