/**
 * Users, projects and backends through real HTTP, on SQLite and Postgres.
 */

import { createFakeBackendPlugin, FAKE_BACKEND_VALID_API_KEY } from '@dstack/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from './api-routes.js';
import { createTestApp, type TestApp } from './testing/test-app.test.helpers.js';
import { checkPostgresReachable } from './testing/test-database.test.helpers.js';

const routes = allRoutes;
const fakeCreds = { type: 'api_key', api_key: FAKE_BACKEND_VALID_API_KEY };

/** Names no resource may have: control characters, escape sequences, slashes, spaces, a megabyte. */
const HOSTILE_NAMES = [
  '',
  'nul\u0000name',
  'crlf\r\nname',
  '\u001b[31mred',
  '../etc',
  'a/b',
  'a b',
  // Half a megabyte: a whole one would be refused (413) by the 1 MiB body limit before the name rule.
  'x'.repeat(512 * 1024),
];

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`API [${dialect}]`, async () => {
    const unreachable = dialect === 'postgres' ? await checkPostgresReachable() : null;
    if (unreachable) {
      it.skip(unreachable, () => {});
      return;
    }
    let server: TestApp;
    let aliceToken: string;
    let bobToken: string;

    beforeAll(async () => {
      server = await createTestApp({
        dialect,
        routes,
        plugins: [createFakeBackendPlugin()],
        config: { projects: [{ name: 'main', backends: [{ type: 'fake', creds: fakeCreds }] }] },
      });
      aliceToken = (await server.request('/api/users/create', { username: 'alice' })).body.creds.token;
      bobToken = (await server.request('/api/users/create', { username: 'bob' })).body.creds.token;
    });
    afterAll(async () => {
      await server?.close();
    });

    it('answers 403 (as dstack) with code not_authenticated for a missing or bad token', async () => {
      const missing = await server.request('/api/users/get_my_user', undefined, null);
      expect(missing.status).toBe(403);
      expect(missing.body).toEqual({
        detail: [{ msg: expect.stringMatching(/^Not authenticated/), code: 'not_authenticated' }],
      });
      const bad = await server.request('/api/users/get_my_user', undefined, 'not-a-token');
      expect(bad).toEqual({
        status: 403,
        body: { detail: [{ msg: 'Invalid token', code: 'not_authenticated' }] },
      });
    });

    it('manages users: create, get_my_user, refresh_token, list', async () => {
      const me = await server.request('/api/users/get_my_user', undefined, aliceToken);
      expect(me.body).toMatchObject({ username: 'alice', global_role: 'user', active: true });

      const duplicate = await server.request('/api/users/create', { username: 'alice' });
      expect(duplicate.status).toBe(400);
      expect(duplicate.body.detail[0]).toMatchObject({ code: 'resource_exists', fields: [['username']] });

      const forbidden = await server.request('/api/users/create', { username: 'mallory' }, aliceToken);
      expect(forbidden).toEqual({
        status: 403,
        body: { detail: [{ msg: 'Access denied', code: 'forbidden' }] },
      });

      const carol = (await server.request('/api/users/create', { username: 'carol' })).body.creds.token;
      const refreshed = await server.request('/api/users/refresh_token', { username: 'carol' }, carol);
      expect(refreshed.status).toBe(200);
      expect((await server.request('/api/users/get_my_user', undefined, carol)).status).toBe(403);
      expect(
        (await server.request('/api/users/get_my_user', undefined, refreshed.body.creds.token)).status,
      ).toBe(200);
      expect(
        (await server.request('/api/users/refresh_token', { username: 'alice' }, refreshed.body.creds.token))
          .status,
      ).toBe(403);

      const asAlice = await server.request('/api/users/list', undefined, aliceToken);
      expect(asAlice.body.map((user: { username: string }) => user.username)).toEqual(['alice']);
      const asAdmin = await server.request('/api/users/list');
      expect(asAdmin.body.map((user: { username: string }) => user.username)).toEqual(
        expect.arrayContaining(['admin', 'alice', 'bob', 'carol']),
      );

      expect((await server.request('/api/users/delete', { users: ['carol'] })).status).toBe(200);
      expect(
        (await server.request('/api/users/get_my_user', undefined, refreshed.body.creds.token)).status,
      ).toBe(403);
    });

    it('deactivates and reactivates a user (users/update), never the caller or the built-in admin', async () => {
      const dave = (await server.request('/api/users/create', { username: 'dave' })).body.creds.token;
      const deactivated = await server.request('/api/users/update', {
        username: 'dave',
        global_role: 'user',
        active: false,
      });
      expect(deactivated).toMatchObject({ status: 200, body: { username: 'dave', active: false } });
      expect((await server.request('/api/users/get_my_user', undefined, dave)).status).toBe(403);
      // dstack's default: a body without `active` makes the user active again.
      const promoted = await server.request('/api/users/update', { username: 'dave', global_role: 'admin' });
      expect(promoted.body).toMatchObject({ global_role: 'admin', active: true });
      expect((await server.request('/api/users/get_my_user', undefined, dave)).status).toBe(200);

      const lockOut = await server.request('/api/users/update', {
        username: 'admin',
        global_role: 'admin',
        active: false,
      });
      expect(lockOut.status).toBe(400);
      expect(lockOut.body.detail[0]).toMatchObject({ fields: [['active']] });
      const email = await server.request('/api/users/update', {
        username: 'dave',
        global_role: 'user',
        email: 'dave@example.com',
      });
      expect(email.status).toBe(400);
      expect(email.body.detail[0].msg).toContain('email');
      const asAlice = await server.request(
        '/api/users/update',
        { username: 'dave', global_role: 'user', active: false },
        aliceToken,
      );
      expect(asAlice.status).toBe(403);
    });

    it("gives each user an SSH key pair (dstack's get_my_user), refreshed by refresh_ssh_key", async () => {
      const me = (await server.request('/api/users/get_my_user', undefined, aliceToken)).body;
      expect(me.ssh_public_key).toMatch(/^ssh-ed25519 /);
      expect(me.ssh_private_key).toMatch(/^-----BEGIN OPENSSH PRIVATE KEY-----/);
      // Others see the public half only.
      const seen = (await server.request('/api/users/get_user', { username: 'alice' })).body;
      expect(seen.ssh_public_key).toBe(me.ssh_public_key);
      expect(seen).not.toHaveProperty('ssh_private_key');

      const refreshed = await server.request('/api/users/refresh_ssh_key', {}, aliceToken);
      expect(refreshed.status).toBe(200);
      expect(refreshed.body.ssh_public_key).not.toBe(me.ssh_public_key);
      expect(
        (await server.request('/api/users/get_my_user', undefined, aliceToken)).body.ssh_private_key,
      ).toBe(refreshed.body.ssh_private_key);
      const someoneElse = await server.request(
        '/api/users/refresh_ssh_key',
        { username: 'admin' },
        aliceToken,
      );
      expect(someoneElse.status).toBe(403);
    });

    it("keeps the SSH public keys users add (dstack's users/public_keys)", async () => {
      const line = (await server.request('/api/users/get_my_user')).body.ssh_public_key.trim();
      const added = await server.request(
        '/api/users/public_keys/add',
        { key: `${line}`, name: null },
        aliceToken,
      );
      expect(added.status).toBe(200);
      expect(added.body).toMatchObject({
        name: 'dstack',
        type: 'ssh-ed25519',
        fingerprint: expect.stringMatching(/^SHA256:/),
      });
      const again = await server.request('/api/users/public_keys/add', { key: line }, aliceToken);
      expect(again.body.detail[0]).toMatchObject({ code: 'resource_exists', fields: [['key']] });
      const bad = await server.request(
        '/api/users/public_keys/add',
        { key: 'ssh-ed25519 notbase64' },
        aliceToken,
      );
      expect(bad.status).toBe(400);
      expect(bad.body.detail[0].fields).toEqual([['key']]);
      // Each user sees their own keys only.
      expect((await server.request('/api/users/public_keys/list', undefined, aliceToken)).body).toEqual([
        added.body,
      ]);
      expect((await server.request('/api/users/public_keys/list')).body).toEqual([]);
      const missing = await server.request('/api/users/public_keys/delete', { ids: [added.body.id] });
      expect(missing.body.detail[0].code).toBe('resource_not_exists');
      const deleted = await server.request(
        '/api/users/public_keys/delete',
        { ids: [added.body.id] },
        aliceToken,
      );
      expect(deleted.status).toBe(200);
      expect((await server.request('/api/users/public_keys/list', undefined, aliceToken)).body).toEqual([]);
    });

    it('names the field path of an invalid body', async () => {
      const response = await server.request('/api/projects/alpha/add_members', {
        members: [{ username: 'bob', project_role: 'boss' }],
      });
      // The project does not exist: for an admin that is dstack's 400 resource_not_exists, checked before the body.
      expect(response.status).toBe(400);
      expect(response.body.detail[0].code).toBe('resource_not_exists');
      await server.request('/api/projects/create', { project_name: 'validation' });
      const invalid = await server.request('/api/projects/validation/add_members', {
        members: [{ username: 'bob', project_role: 'boss' }],
      });
      expect(invalid.status).toBe(400);
      expect(invalid.body.detail).toEqual([
        {
          msg: expect.stringContaining('members.0.project_role'),
          code: 'invalid_request',
          fields: [['members', 0, 'project_role']],
        },
      ]);
      const missing = await server.request('/api/projects/create', {});
      expect(missing.body.detail).toEqual([
        { msg: 'project_name: field required', code: 'invalid_request', fields: [['project_name']] },
      ]);
    });

    it('refuses an unknown top-level field on every route, naming it', async () => {
      // Upload routes take multipart files, not JSON (their own tests are in repos-routes.test.ts).
      const posts = routes.filter((route) => route.method === 'POST' && !route.upload);
      expect(posts.length).toBeGreaterThan(25);
      // `main` has the fake backend already: backends/create is tried where it has none.
      await server.request('/api/projects/create', { project_name: 'no-backends' });
      for (const route of posts) {
        const project = route.path.endsWith('/backends/create') ? 'no-backends' : 'main';
        const path = route.path.replace('{project_name}', project);
        // A backend's fields are its plugin's: the body names the backend type for it.
        const body = path.includes('/backends/') ? { type: 'fake', zz_unknown: 1 } : { zz_unknown: 1 };
        const response = await server.request(path, body);
        expect(response.status, route.path).toBe(400);
        expect(response.body.detail, route.path).toContainEqual({
          msg: expect.stringMatching(/unknown field/),
          code: expect.any(String),
          fields: [['zz_unknown']],
        });
      }
    });

    it('refuses hostile project, user, backend, fleet and run names, naming the field, without repeating them', async () => {
      const attempts: Array<[string, (name: string) => unknown, Array<string | number>]> = [
        ['/api/projects/create', (name) => ({ project_name: name }), ['project_name']],
        ['/api/users/create', (name) => ({ username: name }), ['username']],
        ['/api/project/main/backends/create', (name) => ({ type: name }), ['type']],
        [
          '/api/project/main/fleets/apply',
          (name) => ({ plan: { spec: { configuration: { type: 'fleet', name, nodes: 0 } } } }),
          ['plan', 'spec', 'configuration', 'name'],
        ],
        [
          '/api/project/main/runs/get_plan',
          (name) => ({ run_spec: { run_name: name, configuration: { type: 'task', commands: ['true'] } } }),
          ['run_spec', 'run_name'],
        ],
        [
          '/api/project/main/runs/get_plan',
          (name) => ({ run_spec: { configuration: { type: 'task', name, commands: ['true'] } } }),
          ['run_spec', 'configuration', 'name'],
        ],
      ];
      for (const [path, body, field] of attempts) {
        for (const name of HOSTILE_NAMES) {
          const response = await server.request(path, body(name));
          const what = `${path} ${JSON.stringify(name.slice(0, 20))}`;
          expect(response.status, what).toBe(400);
          expect(response.body.detail, what).toEqual([expect.objectContaining({ fields: [field] })]);
          expect(JSON.stringify(response.body).length, what).toBeLessThan(1000);
        }
      }
      const projects = await server.request('/api/projects/list');
      expect(projects.body.map((project: { project_name: string }) => project.project_name)).not.toContain(
        HOSTILE_NAMES[1],
      );
    });

    it("keeps dstack's rules: resource names lowercase, user names of letters, digits, - and _", async () => {
      const fleet = (name: string) => ({
        plan: { spec: { configuration: { type: 'fleet', name, nodes: 0 } } },
      });
      for (const name of ['Pool', 'p', '1pool', 'pool_1', `p${'x'.repeat(41)}`]) {
        expect((await server.request('/api/project/main/fleets/apply', fleet(name))).status, name).toBe(400);
      }
      for (const name of ['alice.smith', 'x'.repeat(61)]) {
        expect((await server.request('/api/users/create', { username: name })).status, name).toBe(400);
      }
      for (const name of ['Alice_2', 'x'.repeat(60)]) {
        expect((await server.request('/api/users/create', { username: name })).status, name).toBe(200);
      }
      expect((await server.request('/api/projects/create', { project_name: 'Team_B-2' })).status).toBe(200);
    });

    it('isolates projects: members only, the same 403 whether a project exists or not', async () => {
      const a = await server.request('/api/projects/create', { project_name: 'project-a' }, aliceToken);
      expect(a.status).toBe(200);
      expect(a.body).toMatchObject({
        project_name: 'project-a',
        owner: { username: 'alice' },
        members: [{ user: { username: 'alice' }, project_role: 'admin' }],
      });
      expect(
        (await server.request('/api/projects/create', { project_name: 'project-b' }, bobToken)).status,
      ).toBe(200);

      const denied = { status: 403, body: { detail: [{ msg: 'Access denied', code: 'forbidden' }] } };
      expect(await server.request('/api/projects/project-b/get', undefined, aliceToken)).toEqual(denied);
      expect(await server.request('/api/projects/no-such-project/get', undefined, aliceToken)).toEqual(
        denied,
      );
      expect(await server.request('/api/project/project-b/backends/list', undefined, aliceToken)).toEqual(
        denied,
      );

      const alicesList = await server.request('/api/projects/list', undefined, aliceToken);
      expect(alicesList.body.map((project: { project_name: string }) => project.project_name)).toEqual([
        'project-a',
      ]);
      const adminList = await server.request('/api/projects/list');
      expect(adminList.body.map((project: { project_name: string }) => project.project_name)).toEqual(
        expect.arrayContaining(['main', 'project-a', 'project-b']),
      );
      expect((await server.request('/api/projects/project-b/get')).status).toBe(200);
      expect((await server.request('/api/projects/no-such-project/get')).status).toBe(400);
    });

    it("lists projects with dstack's ListProjectsRequest (its Python API's projects.list())", async () => {
      const names = (body: Array<{ project_name: string }>) => body.map((project) => project.project_name);
      // dstack's projects.list() sends include_not_joined: true. This server has no public projects,
      // so a non-admin's list is their own projects either way; an admin's is every project.
      const alices = await server.request('/api/projects/list', { include_not_joined: true }, aliceToken);
      expect(alices.status).toBe(200);
      expect(names(alices.body)).toEqual(['project-a']);
      const joinedOnly = await server.request(
        '/api/projects/list',
        { include_not_joined: false },
        aliceToken,
      );
      expect(names(joinedOnly.body)).toEqual(['project-a']);
      const admins = await server.request('/api/projects/list', { include_not_joined: false });
      expect(names(admins.body)).toEqual(expect.arrayContaining(['main', 'project-a', 'project-b']));

      const counted = await server.request('/api/projects/list', {
        include_not_joined: true,
        return_total_count: true,
        name_pattern: 'PROJECT-',
        limit: 1,
      });
      expect(counted.status).toBe(200);
      expect(counted.body.total_count).toBe(2);
      expect(names(counted.body.projects)).toHaveLength(1);
      expect(names(counted.body.projects)[0]).toMatch(/^project-[ab]$/);

      const bad = await server.request('/api/projects/list', { name_pattern: 'a%' });
      expect(bad.status).toBe(400);
      expect(bad.body.detail[0].msg).toMatch(/name_pattern/);
      const paged = await server.request('/api/projects/list', { prev_created_at: '2026-01-01T00:00:00Z' });
      expect(paged.status).toBe(400);
      expect(paged.body.detail[0].msg).toMatch(/prev_created_at/);
    });

    it('lets project admins manage members; plain members cannot', async () => {
      const added = await server.request(
        '/api/projects/project-a/add_members',
        { members: [{ username: 'bob', project_role: 'user' }] },
        aliceToken,
      );
      expect(added.status).toBe(200);
      expect((await server.request('/api/projects/project-a/get', undefined, bobToken)).status).toBe(200);
      const bobAdds = await server.request(
        '/api/projects/project-a/add_members',
        { members: [{ username: 'bob', project_role: 'admin' }] },
        bobToken,
      );
      expect(bobAdds.status).toBe(403);
      const removed = await server.request(
        '/api/projects/project-a/remove_members',
        { usernames: ['bob'] },
        aliceToken,
      );
      expect(
        removed.body.members.map((member: { user: { username: string } }) => member.user.username),
      ).toEqual(['alice']);
      expect((await server.request('/api/projects/project-a/get', undefined, bobToken)).status).toBe(403);
      const lastAdmin = await server.request(
        '/api/projects/project-a/remove_members',
        { usernames: ['alice'] },
        aliceToken,
      );
      expect(lastAdmin.status).toBe(400);
    });

    it('manages backends with plugin validation and stores creds encrypted', async () => {
      const asAlice = (await server.request('/api/backends/list_types', undefined, aliceToken)).body;
      expect(asAlice).toContain('fake');
      // The local backend runs jobs on the server's host: only global admins may configure it.
      expect(asAlice).not.toContain('local');
      expect((await server.request('/api/backends/list_types')).body).toEqual(
        expect.arrayContaining(['fake', 'local']),
      );

      const badField = await server.request(
        '/api/project/project-a/backends/create',
        { type: 'fake', creds: { type: 'api_key' }, regions: 'eu' },
        aliceToken,
      );
      expect(badField.status).toBe(400);
      expect(badField.body.detail.map((detail: { fields: unknown }) => detail.fields)).toEqual(
        expect.arrayContaining([[['creds', 'api_key']], [['regions']]]),
      );
      const badCreds = await server.request(
        '/api/project/project-a/backends/create',
        { type: 'fake', creds: { type: 'api_key', api_key: 'wrong' } },
        aliceToken,
      );
      expect(badCreds.body).toEqual({
        detail: [
          {
            msg: 'Invalid credentials: creds.api_key',
            code: 'invalid_credentials',
            fields: [['creds', 'api_key']],
          },
        ],
      });
      const unknownType = await server.request(
        '/api/project/project-a/backends/create',
        { type: 'nope' },
        aliceToken,
      );
      expect(unknownType.status).toBe(400);
      expect(unknownType.body.detail[0].msg).toMatch(/Unknown backend type "nope"; known types: .*fake/);

      const created = await server.request(
        '/api/project/project-a/backends/create',
        { type: 'fake', creds: { type: 'api_key', api_key: FAKE_BACKEND_VALID_API_KEY } },
        aliceToken,
      );
      expect(created.body).toEqual({ name: 'fake', config: { type: 'fake', regions: ['fake-region-1'] } });
      expect(
        (
          await server.request(
            '/api/project/project-a/backends/create',
            { type: 'fake', creds: fakeCreds },
            aliceToken,
          )
        ).status,
      ).toBe(400);

      const row = await server.app.db
        .selectFrom('backends')
        .selectAll()
        .innerJoin('projects', 'projects.id', 'backends.project_id')
        .where('projects.name', '=', 'project-a')
        .executeTakeFirstOrThrow();
      expect(row.auth).toMatch(/^enc:/);
      expect(row.auth).not.toContain(FAKE_BACKEND_VALID_API_KEY);
      expect(row.config).not.toContain(FAKE_BACKEND_VALID_API_KEY);

      const updated = await server.request(
        '/api/project/project-a/backends/update',
        { type: 'fake', regions: ['r2'], creds: fakeCreds },
        aliceToken,
      );
      expect(updated.body.config.regions).toEqual(['r2']);
      const listed = await server.request('/api/project/project-a/backends/list', undefined, aliceToken);
      expect(listed.body).toEqual([{ name: 'fake', config: { type: 'fake', regions: ['r2'] } }]);

      await server.request(
        '/api/projects/project-a/add_members',
        { members: [{ username: 'bob', project_role: 'user' }] },
        aliceToken,
      );
      expect(
        (
          await server.request(
            '/api/project/project-a/backends/delete',
            { backends_names: ['fake'] },
            bobToken,
          )
        ).status,
      ).toBe(403);
      expect(
        (
          await server.request(
            '/api/project/project-a/backends/delete',
            { backends_names: ['fake'] },
            aliceToken,
          )
        ).status,
      ).toBe(200);
      expect(
        (await server.request('/api/project/project-a/backends/list', undefined, aliceToken)).body,
      ).toEqual([]);
    });

    it('deletes projects (admins of the project only) and frees the name', async () => {
      await server.request('/api/projects/create', { project_name: 'doomed' }, aliceToken);
      await server.request(
        '/api/projects/doomed/add_members',
        { members: [{ username: 'bob', project_role: 'manager' }] },
        aliceToken,
      );
      expect(
        (await server.request('/api/projects/delete', { projects_names: ['doomed'] }, bobToken)).status,
      ).toBe(403);
      expect(
        (await server.request('/api/projects/delete', { projects_names: ['doomed'] }, aliceToken)).status,
      ).toBe(200);
      expect((await server.request('/api/projects/doomed/get')).status).toBe(400);
      expect(
        (await server.request('/api/projects/create', { project_name: 'doomed' }, aliceToken)).status,
      ).toBe(200);
    });

    it('serves server info and an OpenAPI document of every route', async () => {
      const info = await server.request('/api/server/get_info', undefined, null);
      expect(info.body).toEqual({ server_version: expect.any(String) });
      const document = await server.request('/api/openapi.json', undefined, null, { method: 'GET' });
      expect(document.status).toBe(200);
      for (const route of routes) {
        const operation = document.body.paths[route.path]?.[route.method.toLowerCase()];
        expect(operation, `${route.method} ${route.path}`).toBeDefined();
        if (route.body)
          expect(operation.requestBody.content['application/json'].schema).toHaveProperty('type', 'object');
      }
      const addMembers = document.body.paths['/api/projects/{project_name}/add_members'].post;
      expect(addMembers.parameters).toEqual([
        { name: 'project_name', in: 'path', required: true, schema: { type: 'string' } },
      ]);
      expect(addMembers.security).toEqual([{ bearerAuth: [] }]);
      expect(
        addMembers.requestBody.content['application/json'].schema.properties.members.items.properties
          .project_role,
      ).toEqual({
        type: 'string',
        enum: ['admin', 'manager', 'user'],
      });
      expect(document.body.components.securitySchemes.bearerAuth).toEqual({ type: 'http', scheme: 'bearer' });
    });
  });
}
