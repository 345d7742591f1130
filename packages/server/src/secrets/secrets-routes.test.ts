/**
 * `/api/project/{p}/secrets/*` through real HTTP, on SQLite and Postgres: who sees what, the
 * value encrypted in its row, validation naming the field, and runs naming unknown secrets.
 */
import { createFakeBackendPlugin, FAKE_BACKEND_VALID_API_KEY } from '@dstack/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from '../api-routes.js';
import { generateAesKey } from '../security/encryption.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { checkPostgresReachable } from '../testing/test-database.test.helpers.js';

const fakeCreds = { type: 'api_key', api_key: FAKE_BACKEND_VALID_API_KEY };
const VALUE = 'hf_s3cr3t-value-0123456789';

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`secrets API [${dialect}]`, async () => {
    const unreachable = dialect === 'postgres' ? await checkPostgresReachable() : null;
    if (unreachable) {
      it.skip(unreachable, () => {});
      return;
    }
    let server: TestApp;
    let adminOfTeam: string;
    let member: string;
    let outsider: string;

    const secrets = (action: string, body?: unknown, token?: string) =>
      server.request(`/api/project/team/secrets/${action}`, body, token);

    beforeAll(async () => {
      server = await createTestApp({
        dialect,
        routes: allRoutes,
        plugins: [createFakeBackendPlugin()],
        config: {
          projects: [{ name: 'main', backends: [{ type: 'fake', creds: fakeCreds }] }],
          encryption: { keys: [generateAesKey()] },
        },
      });
      const token = async (username: string) =>
        (await server.request('/api/users/create', { username })).body.creds.token as string;
      adminOfTeam = await token('alice');
      member = await token('bob');
      outsider = await token('eve');
      expect(
        (await server.request('/api/projects/create', { project_name: 'team' }, adminOfTeam)).status,
      ).toBe(200);
      await server.request(
        '/api/projects/team/add_members',
        { members: [{ username: 'bob', project_role: 'user' }] },
        adminOfTeam,
      );
    });
    afterAll(async () => {
      await server?.close();
    });

    it('lets project admins set, get, update and delete; members list names only', async () => {
      const created = await secrets('create_or_update', { name: 'hf_token', value: VALUE }, adminOfTeam);
      expect(created).toEqual({
        status: 200,
        body: { id: expect.any(String), name: 'hf_token', value: VALUE },
      });
      await secrets('create_or_update', { name: 'other', value: 'x' }, adminOfTeam);

      const asMember = await secrets('list', undefined, member);
      expect(asMember.status).toBe(200);
      expect(asMember.body.map((secret: { name: string }) => secret.name).sort()).toEqual([
        'hf_token',
        'other',
      ]);
      expect(asMember.body.every((secret: { value: unknown }) => secret.value === null)).toBe(true);
      expect((await secrets('list', undefined, adminOfTeam)).body[0].value).toBeNull();

      expect((await secrets('get', { name: 'hf_token' }, member)).status).toBe(403);
      expect((await secrets('create_or_update', { name: 'hf_token', value: 'x' }, member)).status).toBe(403);
      expect((await secrets('delete', { secrets_names: ['hf_token'] }, member)).status).toBe(403);
      for (const action of ['list', 'get']) {
        expect(
          (await secrets(action, action === 'get' ? { name: 'hf_token' } : undefined, outsider)).status,
        ).toBe(403);
      }

      expect((await secrets('get', { name: 'hf_token' }, adminOfTeam)).body.value).toBe(VALUE);
      // The global admin is an admin of every project.
      expect((await secrets('get', { name: 'hf_token' })).body.value).toBe(VALUE);

      const updated = await secrets(
        'create_or_update',
        { name: 'hf_token', value: 'new-value' },
        adminOfTeam,
      );
      expect(updated.body).toEqual({ ...created.body, value: 'new-value' });
      expect((await secrets('get', { name: 'hf_token' }, adminOfTeam)).body.value).toBe('new-value');

      expect((await secrets('delete', { secrets_names: ['hf_token', 'other'] }, adminOfTeam)).status).toBe(
        200,
      );
      expect((await secrets('list', undefined, adminOfTeam)).body).toEqual([]);
    });

    it('answers 400 resource_not_exists naming the secret, and deletes all or none', async () => {
      const missing = await secrets('get', { name: 'nope' });
      expect(missing.status).toBe(400);
      expect(missing.body.detail[0]).toMatchObject({
        msg: expect.stringContaining('"nope"'),
        code: 'resource_not_exists',
      });

      await secrets('create_or_update', { name: 'kept', value: 'v' });
      const partial = await secrets('delete', { secrets_names: ['kept', 'nope'] });
      expect(partial.status).toBe(400);
      expect(partial.body.detail[0].msg).toContain('"nope"');
      expect((await secrets('get', { name: 'kept' })).status).toBe(200);
      await secrets('delete', { secrets_names: ['kept'] });
    });

    it('keeps the value encrypted in its row, per project', async () => {
      await secrets('create_or_update', { name: 'stored', value: VALUE });
      await server.request('/api/project/main/secrets/create_or_update', {
        name: 'stored',
        value: 'main-value',
      });
      const rows = await server.app.db
        .selectFrom('secrets')
        .selectAll()
        .where('name', '=', 'stored')
        .execute();
      expect(rows).toHaveLength(2);
      for (const row of rows) {
        expect(row.value).toMatch(/^enc:aes:/);
        expect(row.value).not.toContain(VALUE);
        expect(row.value).not.toContain(Buffer.from(VALUE).toString('base64').slice(0, 16));
      }
      expect(rows.map((row) => server.app.encryption.decrypt(row.value)).sort()).toEqual(
        ['main-value', VALUE].sort(),
      );
      await secrets('delete', { secrets_names: ['stored'] });
      await server.request('/api/project/main/secrets/delete', { secrets_names: ['stored'] });
    });

    it('refuses bad names and values, naming the field', async () => {
      for (const name of ['', 'has space', 'a/b', 'dot.name', 'x'.repeat(201)]) {
        const answer = await secrets('create_or_update', { name, value: 'v' });
        expect(answer.status, name).toBe(400);
        expect(answer.body.detail, name).toEqual([
          {
            msg: expect.stringContaining('secret name must be'),
            code: 'invalid_request',
            fields: [['name']],
          },
        ]);
      }
      const long = await secrets('create_or_update', { name: 'long', value: 'v'.repeat(5001) });
      expect(long.status).toBe(400);
      expect(long.body.detail[0].fields).toEqual([['value']]);
      expect((await secrets('create_or_update', { name: 'no_value' })).body.detail[0]).toMatchObject({
        msg: 'value: field required',
        fields: [['value']],
      });
      expect((await secrets('delete', { secrets_names: [] })).status).toBe(400);
    });

    it('refuses a run naming an unknown secret at plan and apply; accepts it once the secret exists', async () => {
      const configuration = {
        type: 'task',
        commands: ['true'],
        env: { HF_TOKEN: `\${{ secrets.hf }}` },
        registry_auth: { username: 'user', password: `\${{ secrets.registry }}` },
      };
      const plan = () => server.request('/api/project/main/runs/get_plan', { run_spec: { configuration } });
      const refused = await plan();
      expect(refused.status).toBe(400);
      expect(refused.body.detail).toEqual([
        {
          msg: expect.stringMatching(/^env\.HF_TOKEN: secret "hf" does not exist/),
          code: 'error',
          fields: [['run_spec', 'configuration', 'env', 'HF_TOKEN']],
        },
      ]);
      await server.request('/api/project/main/secrets/create_or_update', { name: 'hf', value: VALUE });
      const registry = await server.request('/api/project/main/runs/apply', {
        plan: { run_spec: { configuration } },
      });
      expect(registry.status).toBe(400);
      expect(registry.body.detail[0].fields).toEqual([
        ['run_spec', 'configuration', 'registry_auth', 'password'],
      ]);
      const runs = await server.request('/api/runs/list', { project_name: 'main' });
      expect(runs.body).toEqual([]);

      await server.request('/api/project/main/secrets/create_or_update', { name: 'registry', value: VALUE });
      const accepted = await plan();
      expect(accepted.status).toBe(200);
      expect(accepted.body.job_plans[0].job_spec.env.HF_TOKEN).toBe(`\${{ secrets.hf }}`);
      expect(JSON.stringify(accepted.body)).not.toContain(VALUE);
    });
  });
}
