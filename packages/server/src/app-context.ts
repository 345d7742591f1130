/**
 * Builds the one `AppContext` of a server process, the same way for the server (app.ts) and for
 * the tests' servers and pipeline harnesses.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { BackendPlugin } from '@dstack/core';
import type { Kysely } from 'kysely';
import type { AgentConnector } from './agents/agent-connector.js';
import { BackendRegistry } from './backends/registry.js';
import type { AppCaches, AppContext, Encryption, ServerSettings, SqlDialect } from './context.js';
import type { Database } from './db/schema.js';
import { WakeUps } from './pipelines/wake-ups.js';
import { createEncryption } from './security/encryption.js';
import { LogNotifications } from './services/log-notifications.js';

export interface AppContextParts {
  db: Kysely<Database>;
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
}

export function createAppContext(parts: AppContextParts): AppContext {
  const { plugins = [], ...given } = parts;
  // The registry reads the database and the (later replaced) encryption through the context it belongs to.
  const app = {
    ...given,
    encryption: parts.encryption ?? createEncryption([]),
    serverId: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    wakeUps: new WakeUps(),
    logNotifications: new LogNotifications(),
    caches: createAppCaches(),
  } satisfies Omit<AppContext, 'backends'> as Omit<AppContext, 'backends'> & { backends?: BackendRegistry };
  const backends = new BackendRegistry(app as AppContext);
  for (const plugin of plugins) backends.registerPlugin(plugin);
  app.backends = backends;
  return app as AppContext;
}

/** Empty caches, for a new context (and tests of one cache's user). */
export function createAppCaches(): AppCaches {
  return {
    projects: new Map(),
    projectKeys: new WeakMap(),
    instanceHostKeys: new Map(),
    agentTokens: new Map(),
    replicaTurns: new Map(),
  };
}
