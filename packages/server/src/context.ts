/**
 * What every service, route and pipeline of one server process shares.
 * Built once by `createServerApp` (app.ts).
 */

import type { Kysely } from 'kysely';
import type { ProjectCaches } from './accounts/project-caches.js';
import type { AgentCaches } from './agents/agent-caches.js';
import type { AgentConnector } from './agents/agent-connector.js';
import type { BackendRegistry } from './backends/registry.js';
import type { DefaultPermissions } from './config/server-config.js';
import type { Database } from './db/schema.js';
import type { FleetCaches } from './fleets/fleet-caches.js';
import type { LogNotifications } from './logs/log-notifications.js';
import type { MetricsCaches } from './metrics/metrics-caches.js';
import type { WakeUps } from './pipelines/wake-ups.js';
import type { RunCaches } from './runs/run-caches.js';
import type { Encryption } from './security/encryption.js';
import type { ServiceCaches } from './services/service-caches.js';
import type { ServerSettings } from './settings.js';

export type SqlDialect = 'sqlite' | 'postgres';

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
  /** The database as requests query it. */
  db: Kysely<Database>;
  /** The same database as background work queries it (yielding to requests on SQLite): see `backgroundContextOf`. */
  backgroundDb: Kysely<Database>;
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

/** This process's caches, each domain's own (its module says what it keeps and why). */
export interface AppCaches {
  projects: ProjectCaches;
  agents: AgentCaches;
  services: ServiceCaches;
  runs: RunCaches;
  fleets: FleetCaches;
  metrics: MetricsCaches;
}
