/**
 * The server process: settings, config.yml, database, backends, pipelines and
 * the HTTP API, started in that order and stopped in reverse.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { hostname } from 'node:os';
import type { BackendPlugin } from '@dstack/core';
import { AgentConnector } from './agents/index.js';
import { listAvailableBackendTypes } from './backends/discovery.js';
import { getBackendRegistry } from './backends/registry.js';
import {
  loadServerConfig,
  type ServerConfig,
  type ServerConfigInput,
  ServerConfigSchema,
} from './config/server-config.js';
import { initializeServerState } from './config/server-state.js';
import type { AppContext, ServerSettings } from './context.js';
import { openDatabase } from './db/database.js';
import { migrateToLatest } from './db/migrations.js';
import { closeHttpServer } from './http/close-http-server.js';
import { createHttpHandler } from './http/http-handler.js';
import { fleetPipeline } from './pipelines/fleet-pipeline.js';
import { instancePipeline } from './pipelines/instance-pipeline.js';
import { jobRunningPipeline } from './pipelines/job-running.js';
import { jobSubmittedPipeline } from './pipelines/job-submitted.js';
import { jobTerminatingPipeline } from './pipelines/job-terminating.js';
import { type ClaimedRow, Pipeline, type PipelineDefinition } from './pipelines/pipeline.js';
import { runPipeline } from './pipelines/run-pipeline.js';
import { WakeUps } from './pipelines/wake-ups.js';
import { allRoutes } from './routes/all-routes.js';
import { rawRoutes } from './routes/proxy-routes.js';
import type { RunServices } from './run-services.js';
import { createEncryption } from './security/encryption.js';
import { protectSecretsAtRest } from './security/secrets-at-rest.js';
import { ensureDefaultLocalFleets } from './services/fleets.js';
import { loadServerSettings } from './settings.js';

export interface StartServerOptions extends Partial<ServerSettings> {
  /** Where settings come from; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Used instead of `{serverDir}/config.yml` (tests, embedders). */
  config?: ServerConfigInput;
  /** Backend plugins to use besides the installed packages (tests, benchmarks). */
  plugins?: readonly BackendPlugin[];
  /** Start the background pipelines; default true. */
  pipelines?: boolean;
}

export interface RunningServer {
  /** `http://host:port`. */
  url: string;
  /** The admin token, when it was just created (print it once). */
  adminToken: string | null;
  app: AppContext;
  close(): Promise<void>;
}

const PIPELINE_FACTORIES: ReadonlyArray<(app: AppContext) => PipelineDefinition<ClaimedRow>> = [
  runPipeline,
  jobSubmittedPipeline,
  jobRunningPipeline,
  jobTerminatingPipeline,
  instancePipeline,
  fleetPipeline,
] as unknown as ReadonlyArray<(app: AppContext) => PipelineDefinition<ClaimedRow>>;

/**
 * Only one server can use a SQLite file, so claims left by a previous process
 * (killed, or restarted mid-run) are released at once instead of expiring.
 */
async function releaseStaleSqliteLocks(app: AppContext): Promise<void> {
  if (app.dialect !== 'sqlite') return;
  for (const table of ['runs', 'jobs', 'instances', 'fleets'] as const) {
    await app.db
      .updateTable(table)
      .set({ lock_token: null, lock_owner: null, lock_expires_at: null } as never)
      .where('lock_token', 'is not', null)
      .execute();
  }
}

async function listen(server: Server, host: string, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return typeof address === 'object' && address ? address.port : port;
}

export async function startServer(options: StartServerOptions = {}): Promise<RunningServer> {
  const { env, config: configOverride, plugins = [], pipelines: runPipelines = true, ...overrides } = options;
  const settings = loadServerSettings(env, overrides);
  const defaultBackendTypes = (await listAvailableBackendTypes()).filter((type) => type === 'local');
  const controller = new AbortController();
  const opened = await openDatabase({ url: settings.databaseUrl, serverDir: settings.serverDir });
  await migrateToLatest(opened.db, opened.dialect);

  const wakeUps = new WakeUps();
  const app: AppContext = {
    db: opened.db,
    dialect: opened.dialect,
    settings,
    encryption: createEncryption([]),
    serverId: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    signal: controller.signal,
    services: {},
  };
  const registry = getBackendRegistry(app);
  for (const plugin of plugins) registry.registerPlugin(plugin);
  const agents = new AgentConnector();
  const runServices: RunServices = { backends: registry, agents, wakeUps };
  Object.assign(app.services, runServices);

  let config: ServerConfig | Awaited<ReturnType<typeof loadServerConfig>>;
  if (configOverride) {
    config = ServerConfigSchema.parse(configOverride);
    app.encryption = createEncryption(config.encryption.keys);
  } else {
    config = await loadServerConfig({
      serverDir: settings.serverDir,
      resolvePlugin: (type) => registry.getPlugin(type),
      defaultBackendTypes,
    });
    app.encryption = createEncryption(config.config.encryption.keys);
  }
  const { adminToken } = await initializeServerState(app, config);
  await protectSecretsAtRest(app);
  await ensureDefaultLocalFleets(app);
  await releaseStaleSqliteLocks(app);

  const started = runPipelines ? PIPELINE_FACTORIES.map((factory) => new Pipeline(app, factory(app))) : [];
  for (const pipeline of started) pipeline.start(wakeUps);

  const handler = createHttpHandler(app, allRoutes, { rawRoutes });
  const server = createServer(handler);
  server.on('upgrade', handler.upgrade);
  server.keepAliveTimeout = 65_000;
  const port = await listen(server, settings.host, settings.port);
  const url = `http://${settings.host.includes(':') ? `[${settings.host}]` : settings.host}:${port}`;

  let closing: Promise<void> | null = null;
  return {
    url,
    adminToken,
    app,
    close() {
      closing ??= (async () => {
        // Streams see the abort and write their last line; the database stays open until they are done.
        controller.abort();
        await closeHttpServer(server, handler);
        await Promise.all(started.map((pipeline) => pipeline.stop()));
        await agents.close();
        await opened.close();
      })();
      return closing;
    },
  };
}
