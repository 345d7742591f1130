/**
 * What every service, route and pipeline of one server process shares.
 * Built once by `createServerApp` (app.ts).
 */

import type { RateLimiter } from '@dstack/core/agent-protocol';
import type { Kysely } from 'kysely';
import type { AgentConnector } from './agents/agent-connector.js';
import type { InstanceKeys } from './agents/agent-endpoints.js';
import type { BackendRegistry } from './backends/registry.js';
import type { DefaultPermissions } from './config/server-config.js';
import type { Database, ProjectsTable } from './db/schema.js';
import type { LogNotifications } from './logs/log-notifications.js';
import type { WakeUps } from './pipelines/wake-ups.js';
import type { InstanceTakes } from './runs/instance-takes.js';
import type { Encryption } from './security/encryption.js';
import type { ProbeState } from './services/probe-state.js';
import type { ServiceRequestStats } from './services/service-stats.js';

export type SqlDialect = 'sqlite' | 'postgres';

/** Settings from the environment and command line (see settings.ts for defaults and variables). */
export interface ServerSettings {
  /** `DSTACK_SERVER_DIR`, default `~/.dstack/server`: config.yml, data/, local instances. */
  serverDir: string;
  /** `DSTACK_SERVER_HOST`, default `127.0.0.1`. */
  host: string;
  /** `DSTACK_SERVER_PORT`, default 8000; 0 picks a free port. */
  port: number;
  /** `DSTACK_DATABASE_URL`; unset means SQLite at `{serverDir}/data/sqlite.db`. */
  databaseUrl: string | null;
  /** `DSTACK_SERVER_ADMIN_TOKEN`: the admin token to use instead of a generated one. */
  adminToken: string | null;
  /** `DSTACK_SERVER_MAX_OFFERS_TRIED`, default 25. */
  maxOffersTried: number;
  /**
   * Whether backends may use creds of type `default` (the server's own environment);
   * false when `DSTACK_DEFAULT_CREDS_DISABLED` is set. Absent means true.
   */
  defaultCredsEnabled?: boolean;
  /**
   * `DSTACK_SERVER_ALLOW_DEFAULT_CREDS`: whether `backends/create|update` requests may use creds
   * of type `default`, the server's own cloud identity (any project admin would then act as
   * the server in the cloud). config.yml may, unless `DSTACK_DEFAULT_CREDS_DISABLED`. Absent: false.
   */
  allowDefaultCredsInApi?: boolean;
  /**
   * `DSTACK_SERVER_ALLOW_CUSTOM_BACKEND_ENDPOINTS`: whether `backends/create|update` requests may
   * point a backend at custom endpoints (`endpoint_url`, a GCP key's `token_uri`); the server then
   * connects where the request says. config.yml always may. Absent: false.
   */
  allowCustomBackendEndpoints?: boolean;
  /**
   * `DSTACK_SERVER_BACKEND_VALIDATION_DEADLINE`: how long `backends/create|update` waits for the
   * provider while checking a config, in milliseconds (the variable is in seconds). Absent: 5000.
   */
  backendValidationDeadlineMs?: number;
  /**
   * `DSTACK_SHIM_DOWNLOAD_URL`: where a cloud VM's bootstrap downloads the agent runtime (a tarball
   * as npm packs `@dstack/runner-runtime-linux-x64`: node with its loader and libraries, the shim and
   * the runner). The server reads it once to learn the sha256 and size the host checks
   * (`agentDownloadDigest`). Absent: the npm registry's tarball of the release.
   */
  shimDownloadUrl?: string | null;
  /**
   * `DSTACK_RUNNER_DOWNLOAD_URL`: where a container backend's entrypoint (Vast.ai) downloads the
   * runner's portable runtime (a `.tar.gz` of `@dstack/runner`'s `writePortableRuntimeArchive`).
   * Absent: the npm registry's tarball of `@dstack/runner-runtime-linux-x64` of the release.
   */
  runnerDownloadUrl?: string | null;
  /**
   * `DSTACK_SERVER_OFFERS_DEADLINE`: how long a plan waits for a backend's offers, in
   * milliseconds (the variable is in seconds). A backend that answers later (a slow marketplace)
   * is left out of the plan with a warning. Absent: 10 000 ms.
   */
  offersDeadlineMs?: number;
  /**
   * `DSTACK_SERVER_CODE_UPLOAD_LIMIT`: the largest code or file archive `repos/upload_code` and
   * `files/upload_archive` take, in bytes; 0 means no limit. Absent: dstack's 2 MiB.
   */
  codeUploadLimitBytes?: number;
  /**
   * `DSTACK_SERVER_CODE_UNPACKED_LIMIT`: the most bytes a job's code or a `files:` archive may
   * unpack to on the runner (a gzipped tar of zeros grows a thousandfold); 0 means no limit; the
   * job fails naming the variable when one is over. Absent or null: 64 times the upload limit
   * (128 MiB by default; no limit when the upload limit is 0).
   */
  codeUnpackedLimitBytes?: number | null;
  /**
   * `GPUHUNT_CATALOG_URL` (the variable gpuhunt reads): the base URL of gpuhunt's v3 catalog
   * layout that AWS and GCP offers come from; `catalog.url` in config.yml wins over it. Absent:
   * gpuhunt's bucket, `GPUHUNT_CATALOG_URL` of `@dstack/catalog`.
   */
  catalogUrl?: string | null;
  /**
   * `DSTACK_DOCKER_BASE_IMAGE` (dstack's setting; this server's older `DSTACK_BASE_IMAGE` when it
   * is unset): the repository of the default image, with its registry, e.g. a mirror's
   * `registry.internal:5000/dstackai/base`. Absent: `dstackai/base`.
   */
  baseImage?: string | null;
  /** `DSTACK_DOCKER_BASE_IMAGE_VERSION` (dstack's setting): the default image's version. Absent: `0.15`. */
  baseImageVersion?: string | null;
  /** `DSTACK_DOCKER_BASE_IMAGE_UBUNTU_VERSION` (dstack's setting): its Ubuntu. Absent: `24.04`. */
  baseImageUbuntuVersion?: string | null;
  /** `DSTACK_DIND_IMAGE` (dstack's setting): the image of `docker: true`. Absent: `dstackai/dind`. */
  dindImage?: string | null;
  /**
   * `DSTACK_SERVER_METRICS_COLLECT_INTERVAL`: how often a running job's resource use is sampled
   * from its runner, in milliseconds (the variable is in seconds). Absent: dstack's 10 s.
   */
  metricsCollectIntervalMs?: number;
  /**
   * `DSTACK_SERVER_METRICS_RUNNING_TTL_SECONDS` (dstack's setting): how long a running job's
   * samples are kept, in seconds. Absent: 3600.
   */
  metricsRunningTtlSeconds?: number;
  /**
   * `DSTACK_SERVER_METRICS_FINISHED_TTL_SECONDS` (dstack's setting): how long a finished job's
   * samples are kept, in seconds. Absent: 7 days.
   */
  metricsFinishedTtlSeconds?: number;
  /**
   * `DSTACK_ENABLE_PROMETHEUS_METRICS` (dstack's setting): serve `GET /metrics` in Prometheus'
   * text format. Absent: false (`/metrics` answers 404).
   */
  prometheusMetricsEnabled?: boolean;
  /**
   * `DSTACK_PROMETHEUS_AUTH_TOKEN` (dstack's setting): the bearer token `GET /metrics` requires.
   * Absent: none, as in dstack (anyone who reaches the server may read it).
   */
  prometheusAuthToken?: string | null;
  /**
   * How long events are kept, in seconds: `events.ttl_seconds` of config.yml, else
   * `DSTACK_SERVER_EVENTS_TTL_SECONDS` (dstack's setting); 0 records none. Absent: 30 days.
   */
  eventsTtlSeconds?: number;
  /**
   * `DSTACK_ACME_SERVER` (dstack's setting): the ACME directory URL gateways with `certificate:
   * {type: lets-encrypt}` (the default) get their certificates from. Absent: Let's Encrypt's
   * production directory.
   */
  acmeServer?: string;
  /**
   * `DSTACK_ACME_SERVER_CA_FILE`: a PEM file of CA certificates gateways trust for the ACME
   * server's own TLS besides the system's (a private or test ACME server, e.g. pebble); the
   * server reads it at start and sends its contents. Absent: the system's CAs only.
   */
  acmeServerCaCertificates?: string | null;
  /**
   * `DSTACK_ACME_EAB_KID` and `DSTACK_ACME_EAB_HMAC_KEY` (dstack's settings): the External Account
   * Binding an ACME server may require (its key id and base64url HMAC key), set both or neither.
   * Absent: none (Let's Encrypt needs none).
   */
  acmeExternalAccount?: { kid: string; hmacKey: string } | null;
  /**
   * `DSTACK_SERVER_SSHPROXY_PORT`: the port of the built-in SSH proxy (dstack's `sshproxy`), where
   * dstack's own clients attach to jobs; on `host`. 0 picks a free port at every start; null
   * (`off`) serves none. Absent: 0.
   */
  sshProxyPort?: number | null;
  /**
   * `DSTACK_SERVER_ATTACH_WINDOW_SECONDS`: how long after it started a job of a run dstack's client submitted (see `runs/attach-window.ts`) whose runner already
   * reported its end is still shown running, while the server has an SSH proxy. dstack's CLI
   * attaches only to a running job and looks every 1–5 s; on dstack's server a job is running at
   * least 10 s. 0: the end is shown at once. Absent: 10 s.
   */
  attachWindowMs?: number;
  /**
   * `DSTACK_SERVER_SSHPROXY_ADDRESS` (dstack's setting): `host[:port]` clients are told to reach
   * the SSH proxy at, when it is not the address it listens on (NAT, a load balancer). Absent:
   * the listening address (`host`, or this machine's name when `host` is a wildcard).
   */
  sshProxyAddress?: string | null;
}

/** Where dstack's clients reach the built-in SSH proxy (`job_connection_info.sshproxy_*`). */
export interface SshProxyAddress {
  hostname: string;
  port: number;
}

/**
 * What every service, route and pipeline of one server process shares, each member created once
 * by `createAppContext` (app-context.ts), for the server (app.ts) and for tests alike.
 */
export interface AppContext {
  db: Kysely<Database>;
  dialect: SqlDialect;
  settings: ServerSettings;
  /** Replaced once config.yml's keys are loaded. */
  encryption: Encryption;
  /** Identifies this process in lock columns: `host:pid:random`. */
  serverId: string;
  /** Aborted when the server stops. */
  signal: AbortSignal;
  /** config.yml `default_permissions`; absent means dstack's defaults (non-admins may create projects). */
  defaultPermissions?: DefaultPermissions;
  /** Backend plugins, and each project's backends and their Computes. */
  backends: BackendRegistry;
  /** Where the agents of an instance answer (directly, or through an SSH tunnel). */
  agents: AgentConnector;
  /** Wakes a pipeline at once when another one made work for it. */
  wakeUps: WakeUps;
  /** Tells this process's log streams that a run has new log rows. */
  logNotifications: LogNotifications;
  /** This process's caches of rows and decrypted values that never (or rarely) change. */
  caches: AppCaches;
  /** The built-in SSH proxy's address, once it listens; absent when none is served. */
  sshProxy?: SshProxyAddress;
  /**
   * The wall clock, in ms, that run schedules (`schedule: {cron}`), retries' backoff and the
   * window of a `utilization_policy` are read against; tests set it.
   */
  clock: () => number;
}

export interface AppCaches {
  /** Project rows the pipelines reuse for a few seconds (`projectOf`), by project id. */
  projects: Map<string, { row: ProjectsTable; expiresAt: number }>;
  /** Decrypted project SSH keys by project row (rows come from `projects`, so they go with it). */
  projectKeys: WeakMap<ProjectsTable, string>;
  /** Decrypted SSH fleet host keys by instance id; an instance's keys never change. */
  instanceHostKeys: Map<string, InstanceKeys>;
  /** Decrypted agent tokens by instance id; a launched instance's token never changes. Bounded. */
  agentTokens: Map<string, string>;
  /** How many requests each service run's replicas were sent, for round-robin. */
  replicaTurns: Map<string, number>;
  /** Requests the service proxy forwarded per run and second, for autoscaling. */
  serviceStats: ServiceRequestStats;
  /** The service proxy's `rate_limits` buckets. */
  rateLimiter: RateLimiter;
  /** Each probed replica's run of successes per probe and when it is probed next, by job id. */
  probeStates: Map<string, ProbeState>;
  /** The fleet instances this process's job passes are taking, so that they do not all try the same one. */
  instanceTakes: InstanceTakes;
}
