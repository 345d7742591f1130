import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigurationError, formatConfigurationError } from '@dstack/core';
import { createFakeBackendPlugin, FAKE_BACKEND_VALID_API_KEY } from '@dstack/testing';
import { beforeEach, expect, it } from 'vitest';
import { getUserByName, refreshUserToken } from '../accounts/users.js';
import { AgentConnector } from '../agents/index.js';
import { createAppContext } from '../app-context.js';
import { BackendRegistry } from '../backends/registry.js';
import type { AppContext } from '../context.js';
import { createEncryption, generateAesSecret } from '../security/encryption.js';
import { hashToken } from '../security/tokens.js';
import { loadServerSettings } from '../settings.js';
import { describeEachDialect } from '../testing/test-database.test.helpers.js';
import { loadServerConfig } from './server-config.js';
import { initializeServerState } from './server-state.js';

describeEachDialect('initializeServerState', (getDb) => {
  let app: AppContext;
  const secret = generateAesSecret();

  beforeEach(async () => {
    const { db, dialect, directory } = getDb();
    // Each test starts from an empty database.
    for (const table of ['backends', 'members', 'projects', 'users'] as const)
      await db.deleteFrom(table).execute();
    app = createAppContext({
      db,
      dialect,
      settings: loadServerSettings({ DSTACK_SERVER_DIR: directory }),
      encryption: createEncryption([{ type: 'aes', name: 'key1', secret }]),
      signal: new AbortController().signal,
      agents: new AgentConnector(),
    });
    app.backends.registerPlugin(createFakeBackendPlugin());
  });

  async function start(configText: string, adminToken: string | null = null) {
    const { directory } = getDb();
    writeFileSync(join(directory, 'config.yml'), configText);
    app.settings = { ...app.settings, adminToken };
    const registry = app.backends;
    const file = await loadServerConfig({
      serverDir: directory,
      resolvePlugin: (type) => registry.getPlugin(type),
    });
    return initializeServerState(app, file);
  }

  const withFake = (apiKey: string) =>
    `projects:\n  - name: team\n    backends:\n      - type: fake\n        creds:\n          type: api_key\n          api_key: ${apiKey}\n`;

  it('creates admin once and gives its token at every start', async () => {
    const first = await start('projects: []\n');
    expect(first.adminToken).toMatch(/^[0-9a-f-]{36}$/);
    const admin = await app.db
      .selectFrom('users')
      .selectAll()
      .where('name', '=', 'admin')
      .executeTakeFirstOrThrow();
    expect(admin).toMatchObject({ global_role: 'admin', token_hash: hashToken(first.adminToken!) });
    // Kept encrypted, never in plain text.
    expect(admin.token_encrypted).toMatch(/^enc:aes:key1:/);
    expect(admin.token_encrypted).not.toContain(first.adminToken);
    expect((await start('projects: []\n')).adminToken).toBe(first.adminToken);

    // DSTACK_SERVER_ADMIN_TOKEN replaces the token of an existing admin, and is kept as well.
    const given = `given-${randomBytes(4).toString('hex')}`;
    expect((await start('projects: []\n', given)).adminToken).toBe(given);
    const updated = await app.db
      .selectFrom('users')
      .select('token_hash')
      .where('name', '=', 'admin')
      .executeTakeFirstOrThrow();
    expect(updated.token_hash).toBe(hashToken(given));
    expect((await start('projects: []\n')).adminToken).toBe(given);
    // A token the admin refreshes through the API is the one printed next.
    const refreshed = await refreshUserToken(app, await getUserByName(app, 'admin'), 'admin');
    expect((await start('projects: []\n')).adminToken).toBe(refreshed.creds.token);
    expect(await app.db.selectFrom('projects').select('name').execute()).toEqual([{ name: 'main' }]);
  });

  it('gives the token made by a first start that failed on config.yml at the next start', async () => {
    const failed = await start(withFake('wrong')).catch((thrown: unknown) => thrown);
    expect(ConfigurationError.isInstance(failed)).toBe(true);
    const admin = await app.db
      .selectFrom('users')
      .select('token_hash')
      .where('name', '=', 'admin')
      .executeTakeFirstOrThrow();
    const fixed = await start(withFake(FAKE_BACKEND_VALID_API_KEY));
    expect(fixed.adminToken).not.toBeNull();
    expect(hashToken(fixed.adminToken!)).toBe(admin.token_hash);
  });

  it('gives no token for an admin whose token only has a hash, or was refreshed elsewhere', async () => {
    await start('projects: []\n');
    await app.db.updateTable('users').set({ token_encrypted: null }).where('name', '=', 'admin').execute();
    expect((await start('projects: []\n')).adminToken).toBeNull();
    await app.db
      .updateTable('users')
      .set({ token_encrypted: app.encryption.encrypt('stale'), token_hash: hashToken('current') })
      .where('name', '=', 'admin')
      .execute();
    expect((await start('projects: []\n')).adminToken).toBeNull();
  });

  it('syncs config.yml projects and backends, encrypting creds and SSH keys', async () => {
    await start(withFake(FAKE_BACKEND_VALID_API_KEY));
    const project = await app.db
      .selectFrom('projects')
      .selectAll()
      .where('name', '=', 'team')
      .executeTakeFirstOrThrow();
    expect(project.ssh_private_key).toMatch(/^enc:aes:key1:/);
    expect(app.encryption.decrypt(project.ssh_private_key)).toMatch(/^-----BEGIN OPENSSH PRIVATE KEY-----/);
    expect(project.ssh_public_key).toMatch(/^ssh-ed25519 /);
    const member = await app.db
      .selectFrom('members')
      .selectAll()
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect(member.project_role).toBe('admin');

    const row = await app.db
      .selectFrom('backends')
      .selectAll()
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect(row.auth).toMatch(/^enc:aes:key1:/);
    expect(row.auth).not.toContain(FAKE_BACKEND_VALID_API_KEY);
    expect(JSON.parse(app.encryption.decrypt(row.auth))).toEqual({
      type: 'api_key',
      api_key: FAKE_BACKEND_VALID_API_KEY,
    });

    const backends = await app.backends.getProjectBackends(project.id);
    expect(backends.map((backend) => backend.type)).toEqual(['fake']);

    // Removing the backend from config.yml removes its row; the project stays.
    await start('projects:\n  - name: team\n');
    expect(
      await app.db.selectFrom('backends').selectAll().where('project_id', '=', project.id).execute(),
    ).toEqual([]);
    expect(await app.backends.getProjectBackends(project.id)).toEqual([]);
  });

  it('survives two servers starting at once on the same database', async () => {
    const config = withFake(FAKE_BACKEND_VALID_API_KEY);
    const results = await Promise.all([start(config), start(config)]);
    expect(results.filter((result) => result.adminToken !== null).length).toBeGreaterThanOrEqual(1);
    expect(await app.db.selectFrom('users').select('name').execute()).toEqual([{ name: 'admin' }]);
    expect(
      (await app.db.selectFrom('projects').select('name').orderBy('name').execute()).map((row) => row.name),
    ).toEqual(['main', 'team']);
    expect(await app.db.selectFrom('backends').select('type').execute()).toEqual([{ type: 'fake' }]);
  });

  it('points at the creds in config.yml when the backend rejects them', async () => {
    const error = await start(withFake('wrong')).catch((thrown: unknown) => thrown);
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect(formatConfigurationError(error as ConfigurationError)).toMatch(
      /config\.yml:7:20: projects\[0\]\.backends\[0\]\.creds\.api_key: Invalid credentials: creds\.api_key$/,
    );
  });

  it('reports a backend that cannot load without hiding the others', async () => {
    await start(withFake(FAKE_BACKEND_VALID_API_KEY));
    const project = await app.db
      .selectFrom('projects')
      .select('id')
      .where('name', '=', 'team')
      .executeTakeFirstOrThrow();
    await app.db
      .insertInto('backends')
      .values({
        id: 'broken',
        project_id: project.id,
        type: 'vastai',
        config: '{}',
        auth: app.encryption.encrypt('{}'),
        created_at: Date.now(),
      })
      .execute();
    const logged: string[] = [];
    const registry = new BackendRegistry(app, {
      importer: async (name) => {
        throw Object.assign(new Error(`Cannot find package '${name}'`), { code: 'ERR_MODULE_NOT_FOUND' });
      },
      logError: (message) => logged.push(message),
    });
    registry.registerPlugin(createFakeBackendPlugin());
    expect((await registry.getProjectBackends(project.id)).map((backend) => backend.type)).toEqual(['fake']);
    expect(await registry.getProjectBackendErrors(project.id)).toEqual([
      { type: 'vastai', message: expect.stringContaining('run "pnpm add @dstack/backend-vastai"') },
    ]);
    expect(logged).toHaveLength(1);
  });
});
