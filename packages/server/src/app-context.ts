/**
 * Builds the one `AppContext` of a server process, the same way for the server (app.ts) and for
 * the tests' servers and pipeline harnesses.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { BackendPlugin } from '@dstack/core';
import type { Kysely } from 'kysely';
import { createProjectCaches } from './accounts/project-caches.js';
import { createAgentCaches } from './agents/agent-caches.js';
import type { AgentConnector } from './agents/agent-connector.js';
import { BackendRegistry } from './backends/registry.js';
import type { AppCaches, AppContext, SqlDialect } from './context.js';
import type { Database } from './db/schema.js';
import { createFleetCaches } from './fleets/fleet-caches.js';
import { LogNotifications } from './logs/log-notifications.js';
import { createMetricsCaches } from './metrics/metrics-caches.js';
import { WakeUps } from './pipelines/wake-ups.js';
import { createRunCaches } from './runs/run-caches.js';
import { createEncryption, type Encryption } from './security/encryption.js';
import { createServiceCaches } from './services/service-caches.js';
import type { ServerSettings } from './settings.js';

export interface AppContextParts {
  db: Kysely<Database>;
  /** The handle background work queries through (`OpenedDatabase.backgroundDb`); default `db`. */
  backgroundDb?: Kysely<Database>;
  dialect: SqlDialect;
  settings: ServerSettings;
  /** Aborted when the server stops. */
  signal: AbortSignal;
  /** The server closes it when it stops. */
  agents: AgentConnector;
  /** Default: no keys (values stored unencrypted) until config.yml's keys are loaded. */
  encryption?: Encryption;
  /** Backend plugins to use besides the installed packages (tests, benchmarks, embedders). */
  plugins?: readonly BackendPlugin[];
  /** The wall clock schedules, retries' backoff and utilization windows are read against; default `Date.now()`. */
  clock?: () => number;
}

export function createAppContext(parts: AppContextParts): AppContext {
  const { plugins = [], clock = () => Date.now(), ...given } = parts;
  const app: Omit<AppContext, 'backends'> = {
    ...given,
    backgroundDb: given.backgroundDb ?? given.db,
    clock,
    encryption: parts.encryption ?? createEncryption([]),
    serverId: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    wakeUps: new WakeUps(),
    logNotifications: new LogNotifications(),
    caches: createAppCaches(),
  };
  // The registry reads the database and the encryption through this very object, whose
  // `encryption` is replaced once config.yml's keys are loaded.
  const backends = new BackendRegistry(app);
  for (const plugin of plugins) backends.registerPlugin(plugin);
  return Object.assign(app, { backends });
}

/** Empty caches, for a new context (and tests of one cache's user). */
export function createAppCaches(): AppCaches {
  return {
    projects: createProjectCaches(),
    agents: createAgentCaches(),
    services: createServiceCaches(),
    runs: createRunCaches(),
    fleets: createFleetCaches(),
    metrics: createMetricsCaches(),
  };
}

/**
 * The context background work (the pipelines, retention) runs with: `app` itself but for `db`,
 * which is `app.backgroundDb`, so that its queries yield to requests' (db/background-work.ts).
 * Every other member is read through to `app`, so what start-up replaces there (the encryption,
 * the settings) is seen here too.
 */
export function backgroundContextOf(app: AppContext): AppContext {
  if (app.backgroundDb === app.db) return app;
  return Object.create(app, { db: { value: app.backgroundDb, enumerable: true } }) as AppContext;
}
