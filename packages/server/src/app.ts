/**
 * The server process: settings, the listening socket, database, config.yml, backends,
 * pipelines and the HTTP API, started in that order.
 */
import { setDefaultCatalog } from '@dstack/catalog';
import type { BackendPlugin } from '@dstack/core';
import { requestAuthentication } from './accounts/request-authentication.js';
import { AgentConnector } from './agents/index.js';
import { allRoutes } from './api-routes.js';
import { backgroundContextOf, createAppContext } from './app-context.js';
import { listAvailableBackendTypes } from './backends/discovery.js';
import { createServerCatalog } from './backends/server-catalog.js';
import {
  loadServerConfig,
  type ServerConfig,
  type ServerConfigInput,
  ServerConfigSchema,
} from './config/server-config.js';
import { initializeServerState } from './config/server-state.js';
import type { AppContext, SshProxyAddress } from './context.js';
import { type OpenedDatabase, openDatabase, parseDatabaseUrl } from './db/database.js';
import { migrateToLatest } from './db/migrations/index.js';
import { lockSqliteDatabase, type SqliteServerLock } from './db/sqlite-server-lock.js';
import { startEventRetention } from './events/event-retention.js';
import { fleetPipeline } from './fleets/fleet-pipeline.js';
import { ensureDefaultLocalFleets } from './fleets/fleets.js';
import { instancePipeline } from './fleets/instance-pipeline.js';
import { gatewayPipeline } from './gateways/gateway-pipeline.js';
import { bindHttpServer } from './http/bind-http-server.js';
import { createHttpHandler } from './http/http-handler.js';
import { loadWebConsole } from './http/web-console.js';
import { startMetricsRetention } from './metrics/metrics-retention.js';
import { openMetricsWarning } from './metrics/prometheus-exposure.js';
import { prometheusRoute } from './metrics/prometheus-route.js';
import { type AnyPipelineDefinition, Pipeline } from './pipelines/pipeline.js';
import type { PipelineName } from './pipelines/wake-ups.js';
import { rawRoutes } from './proxies/proxy-routes.js';
import { type RunningSshProxy, startSshProxy } from './proxies/sshproxy/ssh-proxy-server.js';
import { jobRunningPipeline } from './runs/job-running.js';
import { jobSubmittedPipeline } from './runs/job-submitted.js';
import { jobTerminatingPipeline } from './runs/job-terminating.js';
import { runPipeline } from './runs/run-pipeline.js';
import { createEncryption } from './security/encryption.js';
import { protectSecretsAtRest } from './security/secrets-at-rest.js';
import { loadServerSettings, type ProcessSettings, type ServerSettings } from './settings.js';
import { volumePipeline } from './volumes/volume-pipeline.js';

export interface StartServerOptions extends Partial<ProcessSettings> {
  /** Where settings come from; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Used instead of `{serverDir}/config.yml` (tests, embedders). */
  config?: ServerConfigInput;
  /** Backend plugins to use besides the installed packages (tests, benchmarks). */
  plugins?: readonly BackendPlugin[];
  /** Start the background pipelines; default true. */
  pipelines?: boolean;
  /** The wall clock run schedules, retries' backoff and utilization windows are read against (tests); default `Date.now()`. */
  clock?: () => number;
  /**
   * The web console's build, served at `/`; default the installed @dstack/web's `dist/`, null:
   * no console. A directory without index.html is logged and the server runs without it.
   */
  webConsoleDirectory?: string | null;
}

export interface RunningServer {
  /** `http://host:port`. */
  url: string;
  /**
   * The admin token, printed at every start; null when the server does not know it (an admin
   * created by a version that kept only its hash: `DSTACK_SERVER_ADMIN_TOKEN` sets a new one).
   */
  adminToken: string | null;
  /** Whether `/` serves the web console (its build was found). */
  webConsole: boolean;
  /** Where dstack's clients reach the built-in SSH proxy; null when it is off. */
  sshProxy: SshProxyAddress | null;
  app: AppContext;
  /** Passes over a row each pipeline has made since the start (none when pipelines are off). */
  pipelinePasses(): Map<PipelineName, number>;
  close(): Promise<void>;
}

const PIPELINE_FACTORIES: ReadonlyArray<(app: AppContext) => AnyPipelineDefinition> = [
  runPipeline,
  jobSubmittedPipeline,
  jobRunningPipeline,
  jobTerminatingPipeline,
  instancePipeline,
  fleetPipeline,
  volumePipeline,
  gatewayPipeline,
];

/**
 * Only one server can use a SQLite file (the server lock says so), so claims left by a previous
 * process (killed, or restarted mid-run) are released at once instead of expiring.
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

/** Takes a SQLite file database for this server (not Postgres, whose replicas share it; not `:memory:`). */
function lockSqliteFile(settings: ServerSettings): SqliteServerLock | null {
  const location = parseDatabaseUrl(settings.databaseUrl, settings.serverDir);
  if (location.dialect !== 'sqlite' || location.filename === ':memory:') return null;
  return lockSqliteDatabase(location.filename);
}

/**
 * Starts the server. The port is bound first and the SQLite database locked next, so a server
 * that cannot have either fails (ServerStartError) before it touches the database. A start that
 * fails at any step closes what it had opened.
 */
export async function startServer(options: StartServerOptions = {}): Promise<RunningServer> {
  const {
    env,
    config: configOverride,
    plugins = [],
    pipelines: runPipelines = true,
    webConsoleDirectory,
    clock,
    ...overrides
  } = options;
  const settings = loadServerSettings(env, overrides);
  const http = await bindHttpServer(settings.host, settings.port);
  let sqliteLock: SqliteServerLock | null = null;
  let opened: OpenedDatabase | null = null;
  const agents = new AgentConnector();
  let sshProxy: RunningSshProxy | null = null;
  try {
    sqliteLock = lockSqliteFile(settings);
    opened = await openDatabase({ url: settings.databaseUrl, serverDir: settings.serverDir });
    const database = opened;
    const lock = sqliteLock;
    const { app, adminToken, controller } = await prepareApp(database, settings, {
      agents,
      plugins,
      configOverride,
      clock,
    });
    // The pipelines and retention query through the handle that yields to requests (background-work.ts).
    const background = backgroundContextOf(app);
    const started = runPipelines
      ? PIPELINE_FACTORIES.map((factory) => new Pipeline(background, factory(background)))
      : [];
    for (const pipeline of started) pipeline.start(app.wakeUps);
    const metricsRetention = runPipelines ? startMetricsRetention(background) : null;
    const stopEventRetention = runPipelines ? startEventRetention(background) : async () => {};
    const staticSite = loadWebConsole(webConsoleDirectory);
    sshProxy =
      settings.sshProxy.port === null
        ? null
        : await startSshProxy(app, {
            host: settings.host,
            port: settings.sshProxy.port,
            advertisedAddress: settings.sshProxy.address,
          });
    if (sshProxy) app.sshProxy = sshProxy.address;
    http.serve(
      createHttpHandler(app, allRoutes, {
        authentication: requestAuthentication(app),
        rawRoutes: [...rawRoutes, prometheusRoute],
        staticSite,
      }),
    );

    let closing: Promise<void> | null = null;
    return {
      url: `http://${settings.host.includes(':') ? `[${settings.host}]` : settings.host}:${http.port}`,
      adminToken,
      webConsole: staticSite !== null,
      sshProxy: sshProxy?.address ?? null,
      app,
      pipelinePasses: () => new Map(started.map((pipeline) => [pipeline.name, pipeline.passes])),
      close() {
        closing ??= (async () => {
          // Streams see the abort and write their last line; the database stays open until they are done.
          controller.abort();
          await sshProxy?.close();
          await http.close();
          await Promise.all([...started.map((pipeline) => pipeline.stop()), stopEventRetention()]);
          await metricsRetention?.stop();
          await agents.close();
          await database.close();
          lock?.release();
        })();
        return closing;
      },
    };
  } catch (error) {
    await sshProxy?.close();
    await agents.close();
    await opened?.close();
    sqliteLock?.release();
    await http.close();
    throw error;
  }
}

interface PreparedApp {
  app: AppContext;
  adminToken: string | null;
  /** Aborts `app.signal` when the server closes. */
  controller: AbortController;
}

/** Migrates the database and brings the server's state (config.yml, admin, projects, fleets) up to date. */
async function prepareApp(
  opened: OpenedDatabase,
  settings: ServerSettings,
  parts: {
    agents: AgentConnector;
    plugins: readonly BackendPlugin[];
    configOverride: ServerConfigInput | undefined;
    clock: (() => number) | undefined;
  },
): Promise<PreparedApp> {
  const { agents, plugins, configOverride, clock } = parts;
  const installedBackendTypes = await listAvailableBackendTypes();
  const defaultBackendTypes = installedBackendTypes.filter((type) => type === 'local');
  const controller = new AbortController();
  await migrateToLatest(opened.db, opened.dialect);

  const app = createAppContext({
    db: opened.db,
    backgroundDb: opened.backgroundDb,
    dialect: opened.dialect,
    settings,
    signal: controller.signal,
    agents,
    plugins,
    clock,
  });

  let config: ServerConfig | Awaited<ReturnType<typeof loadServerConfig>>;
  if (configOverride) {
    config = ServerConfigSchema.parse(configOverride);
    app.encryption = createEncryption(config.encryption.keys);
  } else {
    config = await loadServerConfig({
      serverDir: settings.serverDir,
      resolvePlugin: (type) => app.backends.getPlugin(type),
      defaultBackendTypes,
    });
    app.encryption = createEncryption(config.config.encryption.keys);
  }
  const catalogConfig = 'config' in config ? config.config.catalog : config.catalog;
  setDefaultCatalog(
    createServerCatalog({
      url: catalogConfig.url ?? settings.backends.catalogUrl,
      offline: catalogConfig.offline,
      serverDir: settings.serverDir,
      installedBackendTypes,
    }),
  );
  const eventsConfig = 'config' in config ? config.config.events : config.events;
  if (eventsConfig.ttl_seconds !== null)
    app.settings = { ...app.settings, events: { ttlSeconds: eventsConfig.ttl_seconds } };
  const { adminToken } = await initializeServerState(app, config);
  await protectSecretsAtRest(app);
  const metricsWarning = openMetricsWarning(app.settings.metrics);
  if (metricsWarning !== null) console.warn(`[dstack-server] ${metricsWarning}`);
  await ensureDefaultLocalFleets(app);
  await releaseStaleSqliteLocks(app);
  return { app, adminToken, controller };
}
