import type { Kysely } from 'kysely';
import { afterAll, beforeEach, expect, it } from 'vitest';
import { ensureProject } from '../accounts/projects.js';
import { ensureAdminUser } from '../accounts/users.js';
import { AgentConnector } from '../agents/index.js';
import { createAppContext } from '../app-context.js';
import { storeBackendRecord } from '../backends/backends.js';
import type { AppContext } from '../context.js';
import { openDatabase } from '../db/database.js';
import type { Database, InstancesTable } from '../db/schema.js';
import { initRepo } from '../repos/repos.js';
import { createOrUpdateSecret } from '../secrets/secrets.js';
import { loadServerSettings } from '../settings.js';
import { describeEachDialect } from '../testing/test-database.test.helpers.js';
import { createEncryption, type EncryptionKeyConfig, generateAesKey } from './encryption.js';
import { protectSecretsAtRest } from './secrets-at-rest.js';

describeEachDialect('protectSecretsAtRest', (getDb) => {
  const current = generateAesKey();
  const older = generateAesKey();
  const closers: Array<() => Promise<void>> = [];

  function appWith(keys: readonly EncryptionKeyConfig[], db: Kysely<Database> = getDb().db): AppContext {
    return createAppContext({
      db,
      dialect: getDb().dialect,
      settings: loadServerSettings({ DSTACK_SERVER_DIR: getDb().directory }),
      encryption: createEncryption(keys),
      signal: new AbortController().signal,
      agents: new AgentConnector(),
    });
  }

  /** A second connection pool on the same database: another server process. */
  async function secondConnection(): Promise<Kysely<Database>> {
    const { url, directory, postgresSchema } = getDb();
    const opened = await openDatabase({ url, serverDir: directory, postgresSchema });
    closers.push(opened.close);
    return opened.db;
  }

  function sshHostInstance(projectId: string, remoteConnectionInfo: string): InstancesTable {
    return {
      id: `instance-of-${projectId}`,
      project_id: projectId,
      fleet_id: null,
      name: 'host-0',
      instance_num: 0,
      status: 'idle',
      unreachable: 0,
      termination_reason: null,
      termination_reason_message: null,
      created_at: Date.now(),
      last_processed_at: Date.now(),
      started_at: null,
      finished_at: null,
      backend: 'remote',
      region: 'remote',
      price: 0,
      offer: null,
      job_provisioning_data: null,
      requirements: null,
      instance_configuration: null,
      termination_idle_time: null,
      termination_deadline: null,
      provisioning_deadline: null,
      first_termination_retry_at: null,
      last_termination_retry_at: null,
      idle_since: null,
      total_blocks: 1,
      busy_blocks: 0,
      deleted: 0,
      remote_connection_info: remoteConnectionInfo,
      lock_expires_at: null,
      lock_token: null,
      lock_owner: null,
    };
  }

  /** What a server without a key stored: identity-encrypted values, one legacy plain value, one under an older AES key. */
  async function storeUnencryptedSecrets(): Promise<Record<string, string>> {
    const unencrypted = appWith([]);
    const { user: admin } = await ensureAdminUser(unencrypted, null);
    const team = await ensureProject(unencrypted, admin, 'team');
    const legacy = await ensureProject(unencrypted, admin, 'legacy');
    await storeBackendRecord(unencrypted, team.id, 'fake', {
      config: '{}',
      auth: unencrypted.encryption.encrypt('{"api_key":"team-key"}'),
    });
    // Written before encryption existed: plain text, which decrypt passes through.
    await storeBackendRecord(unencrypted, legacy.id, 'fake', {
      config: '{}',
      auth: '{"api_key":"legacy-key"}',
    });
    await unencrypted.db
      .insertInto('instances')
      .values(sshHostInstance(team.id, unencrypted.encryption.encrypt('{"ssh_private_key":"host-key"}')))
      .execute();
    await createOrUpdateSecret(unencrypted, team, 'hf_token', 'project-secret');
    await initRepo(
      unencrypted,
      team,
      admin,
      'repo-1',
      { repo_type: 'remote', repo_name: 'repo' },
      {
        clone_url: 'https://git.example/repo.git',
        oauth_token: 'repo-token',
      },
    );
    const rotated = await ensureProject(unencrypted, admin, 'rotated');
    await unencrypted.db
      .updateTable('projects')
      .set({ ssh_private_key: createEncryption([older]).encrypt('older-key') })
      .where('id', '=', rotated.id)
      .execute();
    return { team: team.id, legacy: legacy.id, rotated: rotated.id };
  }

  async function storedSecrets(): Promise<string[]> {
    const { db } = getDb();
    const projects = await db.selectFrom('projects').select('ssh_private_key as value').execute();
    const backends = await db.selectFrom('backends').select('auth as value').execute();
    const instances = await db.selectFrom('instances').select('remote_connection_info as value').execute();
    const secrets = await db.selectFrom('secrets').select('value').execute();
    const repoCreds = await db.selectFrom('repo_creds').select('creds as value').execute();
    const adminToken = await db.selectFrom('users').select('token_encrypted as value').execute();
    return [...projects, ...backends, ...instances, ...secrets, ...repoCreds, ...adminToken].map(
      (row) => row.value as string,
    );
  }

  beforeEach(async () => {
    const { db } = getDb();
    for (const table of [
      'repo_creds',
      'repos',
      'secrets',
      'instances',
      'backends',
      'members',
      'projects',
      'users',
    ] as const)
      await db.deleteFrom(table).execute();
  });

  afterAll(async () => {
    for (const close of closers) await close();
  });

  it('encrypts identity and plain values under the AES key, leaves AES values alone, and does it once', async () => {
    const ids = await storeUnencryptedSecrets();
    const before = await storedSecrets();
    expect(before.filter((value) => value.startsWith('enc:identity:'))).toHaveLength(7);
    const plaintexts = before.map((value) => createEncryption([older]).decrypt(value));

    const app = appWith([current, older]);
    const warnings: string[] = [];
    const report = await protectSecretsAtRest(app, { warn: (message) => warnings.push(message) });
    expect(report).toEqual({ reencrypted: 8, unknownKeys: {} });
    expect(warnings).toEqual([]);

    const after = await storedSecrets();
    expect(after.every((value) => value.startsWith('enc:aes:'))).toBe(true);
    expect(after.filter((value) => value.startsWith(`enc:aes:${current.name}:`))).toHaveLength(8);
    expect(after.map((value) => app.encryption.decrypt(value)).sort()).toEqual([...plaintexts].sort());
    expect(after.join('\n')).not.toMatch(
      /team-key|legacy-key|host-key|project-secret|repo-token|PRIVATE KEY/,
    );
    const rotated = await app.db
      .selectFrom('projects')
      .select('ssh_private_key')
      .where('id', '=', ids.rotated!)
      .executeTakeFirstOrThrow();
    expect(before).toContain(rotated.ssh_private_key);

    expect(await protectSecretsAtRest(app, { warn: (message) => warnings.push(message) })).toEqual({
      reencrypted: 0,
      unknownKeys: {},
    });
    expect(await storedSecrets()).toEqual(after);
  });

  it('re-encrypts each value once when two servers start at once', async () => {
    await storeUnencryptedSecrets();
    const plaintexts = (await storedSecrets())
      .map((value) => createEncryption([older]).decrypt(value))
      .sort();
    const first = appWith([current, older]);
    const second = appWith([current, older], await secondConnection());
    const reports = await Promise.all(
      [first, second].map((app) => protectSecretsAtRest(app, { warn: () => {} })),
    );
    expect(reports[0]!.reencrypted + reports[1]!.reencrypted).toBe(8);
    const after = await storedSecrets();
    expect(after.every((value) => value.startsWith('enc:aes:'))).toBe(true);
    expect(after.map((value) => second.encryption.decrypt(value)).sort()).toEqual(plaintexts);
  });

  it('warns when secrets stay unencrypted, and names keys config.yml lacks', async () => {
    await storeUnencryptedSecrets();
    const warnings: string[] = [];
    const warn = (message: string) => warnings.push(message);

    expect((await protectSecretsAtRest(appWith([{ type: 'identity' }, current]), { warn })).reencrypted).toBe(
      0,
    );
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(
      /encryption.keys starts with an identity key: backend creds, project SSH private keys, project secrets, repo creds and the admin token are stored unencrypted/,
    );
    expect(warnings[1]).toContain(`keys that config.yml encryption.keys does not list ("${older.name}": 1)`);

    warnings.length = 0;
    await protectSecretsAtRest(appWith([]), { warn });
    expect(warnings[0]).toMatch(/config.yml has no encryption.keys: .* stored unencrypted/);
    expect(await storedSecrets()).not.toContainEqual(expect.stringMatching(`^enc:aes:${current.name}:`));
  });
});
