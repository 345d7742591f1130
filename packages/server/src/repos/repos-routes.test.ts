/**
 * `repos/*` and `files/*` through real HTTP, on SQLite and Postgres: code stored once per
 * content, the upload limit named in the refusal, hashes checked, and runs refused when the code
 * they name was not uploaded.
 */
import { createHash } from 'node:crypto';
import { DEFAULT_CODE_UPLOAD_LIMIT_BYTES } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from '../api-routes.js';
import { generateAesKey } from '../security/encryption.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { checkPostgresReachable } from '../testing/test-database.test.helpers.js';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`repos and files API [${dialect}]`, async () => {
    const unreachable = dialect === 'postgres' ? await checkPostgresReachable() : null;
    if (unreachable) {
      it.skip(unreachable, () => {});
      return;
    }
    let server: TestApp;

    /** POSTs `bytes` as dstack's clients do: multipart, the file named by `name` (default its sha256). */
    const upload = async (path: string, bytes: Uint8Array, name = sha256(bytes)) => {
      const form = new FormData();
      form.append('file', new Blob([bytes]), name);
      const response = await fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.adminToken}` },
        body: form,
      });
      return { status: response.status, body: JSON.parse(await response.text()) };
    };
    const codeRows = async () =>
      (await server.app.db.selectFrom('codes').select('blob_hash').execute()).length;

    beforeAll(async () => {
      server = await createTestApp({
        dialect,
        routes: allRoutes,
        config: { projects: [{ name: 'main' }], encryption: { keys: [generateAesKey()] } },
      });
    });
    afterAll(async () => {
      await server?.close();
    });

    it('initializes a repo, keeps its clone URL encrypted, and stores the same code once', async () => {
      const init = await server.request('/api/project/main/repos/init', {
        repo_id: 'app-1234',
        repo_info: { repo_type: 'remote', repo_name: 'app' },
        repo_creds: { clone_url: 'https://example.com/org/app.git' },
      });
      expect(init.status).toBe(200);
      const stored = await server.app.db.selectFrom('repo_creds').select('creds').executeTakeFirstOrThrow();
      expect(stored.creds).not.toContain('example.com');
      expect(
        (await server.request('/api/project/main/repos/get', { repo_id: 'app-1234', include_creds: true }))
          .body,
      ).toEqual({
        repo_id: 'app-1234',
        repo_info: { repo_type: 'remote', repo_name: 'app' },
        repo_creds: { clone_url: 'https://example.com/org/app.git' },
      });
      const diff = new TextEncoder().encode('diff --git a/x b/x\n');
      expect((await upload('/api/project/main/repos/upload_code?repo_id=app-1234', diff)).status).toBe(200);
      expect((await upload('/api/project/main/repos/upload_code?repo_id=app-1234', diff)).status).toBe(200);
      expect(await codeRows()).toBe(1);
      const other = new TextEncoder().encode('diff --git a/y b/y\n');
      expect((await upload('/api/project/main/repos/upload_code?repo_id=app-1234', other)).status).toBe(200);
      expect(await codeRows()).toBe(2);
    });

    it('keeps a token only for repos/get with include_creds, and refuses creds that do not fit the URL', async () => {
      const init = (repo_creds: Record<string, string>) =>
        server.request('/api/project/main/repos/init', {
          repo_id: 'private-1',
          repo_info: { repo_type: 'remote', repo_name: 'private' },
          repo_creds,
        });
      expect(
        (await init({ clone_url: 'https://example.com/org/private.git', oauth_token: 'tok-9' })).status,
      ).toBe(200);
      const stored = await server.app.db.selectFrom('repo_creds').select('creds').execute();
      expect(stored.map((row) => row.creds).join('\n')).not.toContain('tok-9');
      const listed = await server.request('/api/project/main/repos/list', {});
      const plain = await server.request('/api/project/main/repos/get', { repo_id: 'private-1' });
      expect(JSON.stringify([listed.body, plain.body])).not.toContain('tok-9');
      const withCreds = await server.request('/api/project/main/repos/get', {
        repo_id: 'private-1',
        include_creds: true,
      });
      expect(withCreds.body).toMatchObject({ repo_creds: { oauth_token: 'tok-9' } });

      const keyOverHttps = await init({
        clone_url: 'https://example.com/org/private.git',
        private_key: 'KEY',
      });
      expect(keyOverHttps.status).toBe(400);
      expect(JSON.stringify(keyOverHttps.body)).toContain('a private_key needs an SSH clone_url');
      expect(JSON.stringify(keyOverHttps.body)).toContain('clone_url');
      const tokenOverSsh = await init({ clone_url: 'git@example.com:org/private.git', oauth_token: 't' });
      expect(tokenOverSsh.status).toBe(400);
      expect(JSON.stringify(tokenOverSsh.body)).toContain('an oauth_token needs an HTTP(S) clone_url');
      expect(
        (await init({ clone_url: 'ssh://git@example.com/org/private.git', private_key: 'KEY' })).status,
      ).toBe(200);
    });

    it('refuses code whose name is not its sha256, and code for a repo never initialized', async () => {
      const bytes = new TextEncoder().encode('some code');
      const wrong = await upload(
        '/api/project/main/repos/upload_code?repo_id=app-1234',
        bytes,
        'f'.repeat(64),
      );
      expect(wrong.status).toBe(400);
      expect(wrong.body.detail[0].msg).toContain('sha256');
      const unknown = await upload('/api/project/main/repos/upload_code?repo_id=nope', bytes);
      expect(unknown.status).toBe(400);
      expect(unknown.body.detail[0].msg).toContain('repos/init');
    });

    it('refuses an upload over DSTACK_SERVER_CODE_UPLOAD_LIMIT, naming the limit, and stores nothing', async () => {
      const before = await codeRows();
      server.app.settings.code.uploadLimitBytes = 1000;
      try {
        const large = new Uint8Array(5000).fill(7);
        const refused = await upload('/api/project/main/repos/upload_code?repo_id=app-1234', large);
        expect(refused.status).toBe(400);
        expect(refused.body.detail[0].msg).toMatch(
          /^Repo diff size is 4\.9KB, which exceeds the limit of 1000B\..*DSTACK_SERVER_CODE_UPLOAD_LIMIT/,
        );
        // Over the limit by the request's declared size already: refused before the body is kept.
        const huge = new Uint8Array(200 * 1024);
        const early = await upload('/api/files/upload_archive', huge);
        expect(early.status).toBe(400);
        expect(early.body.detail[0].msg).toContain('Archive size is');
      } finally {
        server.app.settings.code.uploadLimitBytes = DEFAULT_CODE_UPLOAD_LIMIT_BYTES;
      }
      expect(await codeRows()).toBe(before);
    });

    it('stores a file archive once per content and finds it by hash', async () => {
      const bytes = new TextEncoder().encode('an archive');
      const first = await upload('/api/files/upload_archive', bytes);
      const second = await upload('/api/files/upload_archive', bytes);
      expect(first.status).toBe(200);
      expect(second.body).toEqual(first.body);
      expect(first.body.hash).toBe(sha256(bytes));
      const found = await server.request('/api/files/get_archive_by_hash', { hash: sha256(bytes) });
      expect(found.body).toEqual(first.body);
      expect((await server.app.db.selectFrom('file_archives').select('id').execute()).length).toBe(1);
    });

    it('refuses to apply a run whose code or file archive was not uploaded, naming the field', async () => {
      const runSpec = {
        configuration: { type: 'task', commands: ['true'], repos: ['.'] },
        repo_id: 'app-1234',
        repo_data: { repo_type: 'remote', repo_name: 'app', repo_hash: 'a'.repeat(40) },
        repo_code_hash: 'b'.repeat(64),
      };
      const noCode = await server.request('/api/project/main/runs/apply', { plan: { run_spec: runSpec } });
      expect(noCode.status).toBe(400);
      expect(noCode.body.detail[0].msg).toContain('run_spec.repo_code_hash');
      const noArchive = await server.request('/api/project/main/runs/apply', {
        plan: {
          run_spec: {
            configuration: { type: 'task', commands: ['true'] },
            file_archives: [{ id: '00000000-0000-0000-0000-000000000000', path: 'data' }],
          },
        },
      });
      expect(noArchive.status).toBe(400);
      expect(noArchive.body.detail[0].msg).toContain('run_spec.file_archives[0].id');
    });

    it('refuses a repo_id or repo_name holding control or format characters, naming the field', async () => {
      const remote = (repo_name: string) => ({ repo_type: 'remote', repo_name });
      for (const hostile of ['app\u001b[2J', 'app\r\nX-Injected: 1', 'app\u0000', 'app\u202egnp.exe', '']) {
        const badId = await server.request('/api/project/main/repos/init', {
          repo_id: hostile,
          repo_info: remote('app'),
        });
        expect(badId.status).toBe(400);
        expect(badId.body.detail).toEqual([
          expect.objectContaining({
            msg: expect.stringMatching(/^repo_id: repo id must be /),
            fields: [['repo_id']],
          }),
        ]);
        const badName = await server.request('/api/project/main/repos/init', {
          repo_id: 'app-1234',
          repo_info: remote(hostile),
        });
        expect(badName.status).toBe(400);
        expect(badName.body.detail[0].fields).toEqual([['repo_info', 'repo_name']]);
        const badGet = await server.request('/api/project/main/repos/get', { repo_id: hostile });
        expect(badGet.body.detail[0].fields).toEqual([['repo_id']]);
        const badDelete = await server.request('/api/project/main/repos/delete', { repos_ids: [hostile] });
        expect(badDelete.body.detail[0].fields).toEqual([['repos_ids', 0]]);
        const badRun = await server.request('/api/project/main/runs/get_plan', {
          run_spec: {
            configuration: { type: 'task', commands: ['true'] },
            repo_id: hostile,
            repo_data: remote(hostile),
          },
        });
        expect(badRun.status).toBe(400);
        expect(badRun.body.detail.map((detail: { fields: unknown }) => detail.fields)).toEqual([
          [['run_spec', 'repo_id']],
          [['run_spec', 'repo_data', 'repo_name']],
        ]);
      }
      const escapedId = encodeURIComponent('app\u001b[2J');
      const badUpload = await upload(
        `/api/project/main/repos/upload_code?repo_id=${escapedId}`,
        new Uint8Array(1),
      );
      expect(badUpload.status).toBe(400);
      expect(badUpload.body.detail[0]).toMatchObject({ fields: [['repo_id']] });
      expect(badUpload.body.detail[0].msg).toMatch(/^repo_id \(in the query\): repo id must be /);
      // What the CLI makes of a directory named with spaces and letters beyond ASCII is fine.
      const spaced = await server.request('/api/project/main/repos/init', {
        repo_id: 'mon projet été-1a2b3c4d',
        repo_info: remote('mon projet été'),
      });
      expect(spaced.status).toBe(200);
      await server.request('/api/project/main/repos/delete', { repos_ids: ['mon projet été-1a2b3c4d'] });
    });

    it('deletes repos with their code and creds', async () => {
      await server.request('/api/project/main/repos/delete', { repos_ids: ['app-1234', 'private-1'] });
      expect(await codeRows()).toBe(0);
      expect(await server.app.db.selectFrom('repo_creds').select('id').execute()).toEqual([]);
      expect((await server.request('/api/project/main/repos/list')).body).toEqual([]);
    });
  });
}
