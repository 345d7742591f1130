/**
 * A real server for tests: node:http on 127.0.0.1 with a random port, a real
 * database (SQLite file or a fresh Postgres schema), config.yml written to a
 * temporary server directory and loaded the way the server loads it, and
 * `initializeServerState` run (admin user, projects, backends).
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { BackendPlugin } from '@dstack/core';
import { stringify } from 'yaml';
import { requestAuthentication } from '../accounts/request-authentication.js';
import { AgentConnector } from '../agents/index.js';
import { createAppContext } from '../app-context.js';
import { loadServerConfig, type ServerConfigInput } from '../config/server-config.js';
import { initializeServerState } from '../config/server-state.js';
import type { AppContext, SqlDialect } from '../context.js';
import { closeHttpServer } from '../http/close-http-server.js';
import { createHttpHandler } from '../http/http-handler.js';
import type { RouteDefinition } from '../http/route.js';
import { createEncryption } from '../security/encryption.js';
import { loadServerSettings } from '../settings.js';
import { createTestDatabase, type TestDatabase } from './test-database.test.helpers.js';

export interface TestAppOptions {
  dialect: SqlDialect;
  routes: readonly RouteDefinition[];
  /** config.yml content; default `{projects: [{name: main}]}` (no backends). */
  config?: ServerConfigInput;
  /** In-memory backend plugins, registered before config.yml is loaded. */
  plugins?: readonly BackendPlugin[];
  /** `DSTACK_SERVER_ADMIN_TOKEN`; default a generated token. */
  adminToken?: string;
  /** More server settings, as environment variables (`DSTACK_SERVER_ALLOW_DEFAULT_CREDS`, …). */
  env?: Record<string, string>;
}

export interface TestResponse {
  status: number;
  /** The parsed JSON answer (or the text when it is not JSON). */
  // biome-ignore lint/suspicious/noExplicitAny: tests inspect answers of every route.
  body: any;
}

export interface TestApp {
  app: AppContext;
  /** `http://127.0.0.1:<port>`. */
  url: string;
  adminToken: string;
  database: TestDatabase;
  /** POSTs `body` as JSON (GET when `body` is undefined and `method` says so) with `token` (default the admin's; null for none). */
  request(
    path: string,
    body?: unknown,
    token?: string | null,
    options?: { method?: 'GET' | 'POST' },
  ): Promise<TestResponse>;
  /** Stops the server, aborts `app.signal`, closes and removes the database. */
  close(): Promise<void>;
}

export async function createTestApp(options: TestAppOptions): Promise<TestApp> {
  const database = await createTestDatabase(options.dialect);
  const controller = new AbortController();
  // Closed with the server: the SSH tunnels pipelines open to agents.
  const agents = new AgentConnector();
  let server: Server | undefined;
  try {
    const serverDir = database.directory;
    writeFileSync(
      join(serverDir, 'config.yml'),
      stringify(options.config ?? { projects: [{ name: 'main' }] }),
    );
    const settings = loadServerSettings(
      {
        DSTACK_SERVER_DIR: serverDir,
        DSTACK_SERVER_ADMIN_TOKEN: options.adminToken ?? `admin-${randomBytes(8).toString('hex')}`,
        ...options.env,
      },
      { port: 0 },
    );
    const app = createAppContext({
      db: database.db,
      dialect: database.dialect,
      settings,
      signal: controller.signal,
      agents,
      plugins: options.plugins,
    });
    const { backends } = app;
    const configFile = await loadServerConfig({
      serverDir,
      resolvePlugin: (type) => backends.getPlugin(type),
    });
    app.encryption = createEncryption(configFile.config.encryption.keys);
    const { adminToken } = await initializeServerState(app, configFile);

    const handler = createHttpHandler(app, options.routes, {
      authentication: requestAuthentication(app),
      logError: (message) => console.error(message),
    });
    const started = createServer(handler);
    server = started;
    await new Promise<void>((resolve, reject) => {
      started.once('error', reject);
      started.listen(0, '127.0.0.1', () => resolve());
    });
    const address = started.address();
    if (address === null || typeof address === 'string')
      throw new Error('The test server has no TCP address');
    const url = `http://127.0.0.1:${address.port}`;

    return {
      app,
      url,
      adminToken: adminToken!,
      database,
      async request(path, body, token, requestOptions = {}) {
        const method = requestOptions.method ?? 'POST';
        const bearer = token === undefined ? adminToken : token;
        const response = await fetch(`${url}${path}`, {
          method,
          headers: {
            ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined || method === 'GET' ? {} : { body: JSON.stringify(body) }),
        });
        const text = await response.text();
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // Not JSON: keep the text.
        }
        return { status: response.status, body: parsed };
      },
      async close() {
        controller.abort();
        // As the real server: open streams write their last line before the database closes.
        await closeHttpServer(started, handler);
        await agents.close();
        await database.close();
      },
    };
  } catch (error) {
    controller.abort();
    server?.close();
    await agents.close();
    await database.close();
    throw error;
  }
}
