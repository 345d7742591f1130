/**
 * The local backend runs jobs on the server's own host: through real HTTP, on SQLite and
 * Postgres, only global admins configure it, and only in projects a global admin owns.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import localBackendPlugin from '@dstack/backend-local';
import { ConfigurationError } from '@dstack/core';
import { createFakeBackendPlugin, FAKE_BACKEND_VALID_API_KEY } from '@dstack/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoutes } from '../accounts/projects-routes.js';
import { userRoutes } from '../accounts/users-routes.js';
import { loadServerConfig } from '../config/server-config.js';
import { initializeServerState } from '../config/server-state.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { checkPostgresReachable } from '../testing/test-database.test.helpers.js';
import { backendRoutes } from './backends-routes.js';

const routes = [...userRoutes, ...projectRoutes, ...backendRoutes];

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`a backend on the server's host [${dialect}]`, async () => {
    const unreachable = dialect === 'postgres' ? await checkPostgresReachable() : null;
    if (unreachable) {
      it.skip(unreachable, () => {});
      return;
    }
    let server: TestApp;
    let alice: string;
    const local = () => ({ type: 'local', instances_dir: join(server.database.directory, 'instances') });

    beforeAll(async () => {
      server = await createTestApp({
        dialect,
        routes,
        plugins: [localBackendPlugin, createFakeBackendPlugin()],
      });
      alice = (await server.request('/api/users/create', { username: 'alice' })).body.creds.token;
      expect((await server.request('/api/projects/create', { project_name: 'alices' }, alice)).status).toBe(
        200,
      );
    });
    afterAll(async () => {
      await server?.close();
    });

    it('refuses a plain user adding it to their own project, with 403 saying why', async () => {
      const created = await server.request('/api/project/alices/backends/create', local(), alice);
      expect(created).toEqual({
        status: 403,
        body: {
          detail: [
            {
              msg: `Only global admins can configure the "local" backend: it runs jobs on the server's own host`,
              code: 'forbidden',
            },
          ],
        },
      });
      const updated = await server.request('/api/project/alices/backends/update', local(), alice);
      expect(updated.status).toBe(403);
      const listed = await server.request('/api/project/alices/backends/list', {}, alice);
      expect(listed.body).toEqual([]);
    });

    it('lets the plain user add a backend that runs elsewhere', async () => {
      const created = await server.request(
        '/api/project/alices/backends/create',
        { type: 'fake', creds: { type: 'api_key', api_key: FAKE_BACKEND_VALID_API_KEY } },
        alice,
      );
      expect(created.status).toBe(200);
    });

    it("refuses a global admin adding it to the plain user's project", async () => {
      const created = await server.request('/api/project/alices/backends/create', local());
      expect(created.status).toBe(403);
      expect(created.body.detail[0].msg).toBe(
        `The "local" backend runs jobs on the server's own host; project "alices" is owned by "alice", who is not a global admin, so it cannot use it`,
      );
    });

    it("lets a global admin add it to the admin's own project", async () => {
      expect((await server.request('/api/projects/create', { project_name: 'ops' })).status).toBe(200);
      const created = await server.request('/api/project/ops/backends/create', local());
      expect(created.status).toBe(200);
      const backends = await server.app.backends.getProjectBackends(
        (
          await server.app.db
            .selectFrom('projects')
            .select('id')
            .where('name', '=', 'ops')
            .executeTakeFirstOrThrow()
        ).id,
      );
      expect(backends.map((backend) => backend.type)).toEqual(['local']);
    });

    it("refuses config.yml listing it for the plain user's project, at the line of the entry", async () => {
      const serverDir = server.database.directory;
      writeFileSync(
        join(serverDir, 'config.yml'),
        ['projects:', '  - name: alices', '    backends:', '      - type: local', ''].join('\n'),
      );
      const file = await loadServerConfig({
        serverDir,
        resolvePlugin: (type) => server.app.backends.getPlugin(type),
      });
      const started = initializeServerState(server.app, file);
      await expect(started).rejects.toThrow(ConfigurationError);
      await expect(started).rejects.toMatchObject({
        line: 4,
        path: ['projects', 0, 'backends', 0, 'type'],
        message: expect.stringMatching(/project "alices" is owned by "alice", who is not a global admin/),
      });
      const stored = await server.app.db.selectFrom('backends').select('type').execute();
      expect(stored.map((row) => row.type).sort()).toEqual(['fake', 'local']);
    });
  });
}
