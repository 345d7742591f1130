/**
 * End to end: real servers started on a server directory, as `dstack-server` starts them. A
 * new server writes config.yml with an AES key and keeps its files to its own user; a database
 * an unencrypted server filled is encrypted at the next start and still reads back.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createFakeBackendPlugin, FAKE_BACKEND_VALID_API_KEY } from '@dstack/testing';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { parse, stringify } from 'yaml';
import { type RunningServer, startServer } from '../src/app.js';
import {
  checkPostgresReachable,
  createTestDatabase,
  type TestDatabase,
} from '../src/testing/test-database.test.helpers.js';
import { ADMIN_TOKEN, makeTempDir, postgresServerUrl } from './server-harness.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const fake = createFakeBackendPlugin();

function modeOf(path: string): string {
  return (statSync(path).mode & 0o777).toString(8);
}

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`secrets at rest [${dialect}]`, async () => {
    const unreachable = dialect === 'postgres' ? await checkPostgresReachable() : null;
    if (unreachable) {
      it.skip(unreachable, () => {});
      return;
    }
    const temp = makeTempDir();
    const postgres: TestDatabase | undefined =
      dialect === 'postgres' ? await createTestDatabase('postgres') : undefined;
    const running: RunningServer[] = [];

    /** A server on `serverDir`, with config.yml read from there (as the binary does). */
    async function start(serverDir: string): Promise<RunningServer> {
      const server = await startServer({
        env: {
          DSTACK_SERVER_DIR: serverDir,
          DSTACK_SERVER_ADMIN_TOKEN: ADMIN_TOKEN,
          ...(postgres ? { DSTACK_DATABASE_URL: postgresServerUrl(postgres) } : {}),
        },
        port: 0,
        plugins: [fake],
        pipelines: false,
      });
      running.push(server);
      return server;
    }

    async function storedSecrets(server: RunningServer): Promise<string[]> {
      const projects = await server.app.db
        .selectFrom('projects')
        .select('ssh_private_key as value')
        .execute();
      const backends = await server.app.db.selectFrom('backends').select('auth as value').execute();
      return [...projects, ...backends].map((row) => row.value);
    }

    afterEach(async () => {
      for (const server of running.splice(0)) await server.close();
      vi.restoreAllMocks();
    });
    afterAll(async () => {
      await postgres?.close();
      temp.remove();
    });

    it('a new server directory gets config.yml with an AES key, modes 0700 and 0600, and AES-encrypted secrets', async () => {
      const serverDir = join(temp.dir, 'fresh', 'server');
      const server = await start(serverDir);
      const config = parse(readFileSync(join(serverDir, 'config.yml'), 'utf8'));
      expect(config.encryption.keys).toEqual([
        { type: 'aes', name: expect.stringMatching(/^key-[0-9a-f]{8}$/), secret: expect.any(String) },
      ]);
      expect(Buffer.from(config.encryption.keys[0].secret, 'base64')).toHaveLength(32);
      expect(modeOf(serverDir)).toBe('700');
      expect(modeOf(join(serverDir, 'config.yml'))).toBe('600');
      if (dialect === 'sqlite') {
        expect(modeOf(join(serverDir, 'data'))).toBe('700');
        for (const file of ['sqlite.db', 'sqlite.db-wal', 'sqlite.db-shm']) {
          expect(modeOf(join(serverDir, 'data', file))).toBe('600');
        }
      }

      const created = await fetch(`${server.url}/api/project/main/backends/create`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          type: 'fake',
          creds: { type: 'api_key', api_key: FAKE_BACKEND_VALID_API_KEY },
        }),
      });
      expect(created.status).toBe(200);
      const secrets = await storedSecrets(server);
      expect(secrets.length).toBeGreaterThanOrEqual(2);
      for (const value of secrets) expect(value).toMatch(`enc:aes:${config.encryption.keys[0].name}:`);
      expect(secrets.join('\n')).not.toContain(FAKE_BACKEND_VALID_API_KEY);
    });

    it('warns about an explicit identity key, then encrypts what it stored once a key is configured', async () => {
      if (postgres) {
        for (const table of ['fleets', 'backends', 'members', 'projects', 'users'] as const) {
          await postgres.db.deleteFrom(table).execute();
        }
      }
      const serverDir = join(temp.dir, 'identity');
      const configPath = join(serverDir, 'config.yml');
      await start(serverDir).then((server) => server.close());
      const generated = parse(readFileSync(configPath, 'utf8'));
      const fakeBackend = { type: 'fake', creds: { type: 'api_key', api_key: FAKE_BACKEND_VALID_API_KEY } };
      // Identity first stores new values unencrypted; the generated key stays after it to read
      // what the first start stored under it.
      writeFileSync(
        configPath,
        stringify({
          projects: [
            { name: 'main', backends: [fakeBackend] },
            { name: 'team', backends: [fakeBackend] },
          ],
          encryption: { keys: [{ type: 'identity' }, ...generated.encryption.keys] },
        }),
      );
      const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
      const unencrypted = await start(serverDir);
      expect(warn).toHaveBeenCalledWith(
        expect.stringMatching(/encryption.keys starts with an identity key: .* stored unencrypted/),
      );
      const before = await storedSecrets(unencrypted);
      expect(before.filter((value) => value.startsWith('enc:identity:')).length).toBeGreaterThanOrEqual(3);
      const plaintexts = before.map((value) => unencrypted.app.encryption.decrypt(value)).sort();
      await unencrypted.close();

      // The operator puts the AES key first. No project is listed, so no backend is stored again
      // from config.yml: the values the last start stored must be encrypted where they are.
      writeFileSync(configPath, stringify({ projects: [], encryption: { keys: generated.encryption.keys } }));
      warn.mockClear();
      const encrypted = await start(serverDir);
      expect(warn).not.toHaveBeenCalled();
      const after = await storedSecrets(encrypted);
      expect(after.every((value) => value.startsWith(`enc:aes:${generated.encryption.keys[0].name}:`))).toBe(
        true,
      );
      expect(after.map((value) => encrypted.app.encryption.decrypt(value)).sort()).toEqual(plaintexts);
      const listed = await fetch(`${encrypted.url}/api/project/team/backends/list`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(await listed.json()).toEqual([expect.objectContaining({ name: 'fake' })]);
    });
  });
}
