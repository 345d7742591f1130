/**
 * `backends/create` takes a config from any project admin: through real HTTP, with the real
 * aws, gcp and vastai plugins, it must not read the server's files, connect where the request
 * says, or hand out the server's cloud identity, and it never answers 500. config.yml, the
 * server admin's own file, still may do all three.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type GcpEmulator, gcpEmulatorBackend, startGcpEmulator } from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoutes } from '../accounts/projects-routes.js';
import { userRoutes } from '../accounts/users-routes.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { backendRoutes } from './backends-routes.js';
import { PROVIDER_UNREACHABLE_MESSAGE } from './untrusted-validation.js';

const routes = [...userRoutes, ...projectRoutes, ...backendRoutes];

/** A TCP listener that counts connections and answers each with `answer` (or never, when null). */
async function listen(
  answer: string | null,
): Promise<{ url: string; connections: () => number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let count = 0;
  const server: Server = createServer((socket) => {
    count++;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    if (answer !== null) socket.once('data', () => socket.end(answer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => count,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A port nothing listens on: one a listener had, closed again. */
async function closedPortUrl(): Promise<string> {
  const listener = await listen(null);
  await listener.close();
  return listener.url;
}

const awsKey = { type: 'access_key', access_key: 'AKIAEXAMPLE000000000', secret_key: 'secret' };
const vastKey = { type: 'api_key', api_key: 'vast-key' };
const runpodKey = { type: 'api_key', api_key: 'runpod-key' };

// Loading the aws plugin (the AWS SDK) takes seconds on a busy machine.
describe('backends/create from the API', { timeout: 30_000 }, () => {
  let gcp: GcpEmulator;
  let strict: TestApp;
  let permissive: TestApp;
  let counting: Awaited<ReturnType<typeof listen>>;
  let garbage: Awaited<ReturnType<typeof listen>>;
  let silent: Awaited<ReturnType<typeof listen>>;
  let keyDirectory: string;
  let keyFile: string;
  let gcpKey: Record<string, unknown>;

  beforeAll(async () => {
    gcp = await startGcpEmulator();
    gcpKey = gcp.serviceAccountJson() as unknown as Record<string, unknown>;
    counting = await listen('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}');
    garbage = await listen('\u0000\u00ffnot http at all\r\n\r\n');
    silent = await listen(null);
    // config.yml is the admin's: a key file on the server and the emulator's endpoints are fine there.
    keyDirectory = mkdtempSync(join(tmpdir(), 'gcp-key-'));
    keyFile = join(keyDirectory, 'key.json');
    writeFileSync(keyFile, JSON.stringify(gcpKey));
    strict = await createTestApp({
      dialect: 'sqlite',
      routes,
      config: {
        projects: [
          {
            name: 'main',
            backends: [{ ...gcpEmulatorBackend(gcp), creds: { type: 'service_account', filename: keyFile } }],
          },
        ],
      },
    });
    permissive = await createTestApp({
      dialect: 'sqlite',
      routes,
      env: {
        DSTACK_SERVER_ALLOW_CUSTOM_BACKEND_ENDPOINTS: 'true',
        DSTACK_SERVER_ALLOW_DEFAULT_CREDS: 'true',
        DSTACK_SERVER_BACKEND_VALIDATION_DEADLINE: '1',
      },
    });
    for (const server of [strict, permissive]) {
      expect((await server.request('/api/projects/create', { project_name: 'team' })).status).toBe(200);
    }
  });
  afterAll(async () => {
    await strict?.close();
    await permissive?.close();
    await Promise.all([counting?.close(), garbage?.close(), silent?.close(), gcp?.close()]);
    if (keyDirectory) rmSync(keyDirectory, { recursive: true, force: true });
  });

  // `main` of the strict server has config.yml's gcp backend: requests add backends to `team`.
  const create = (server: TestApp, body: Record<string, unknown>) =>
    server.request('/api/project/team/backends/create', body);

  it('keeps a config.yml backend whose key is a file on the server, stored as its data', async () => {
    const listed = await strict.request('/api/project/main/backends/list');
    expect(listed.body).toEqual([expect.objectContaining({ name: 'gcp' })]);
    expect(listed.body[0].error).toBeUndefined();
  });

  it('refuses creds.filename without reading it: the same 400 for a file, a missing path and a directory', async () => {
    const answers = await Promise.all(
      ['/etc/passwd', '/etc/shadow', '/no/such/key.json', '/etc', keyFile].map((filename) =>
        create(strict, {
          type: 'gcp',
          project_id: gcp.project,
          creds: { type: 'service_account', filename },
        }),
      ),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(400);
      expect(answer.body.detail).toEqual([
        { msg: expect.stringContaining('send the file'), code: 'error', fields: [['creds', 'filename']] },
      ]);
      expect(answer.body).toEqual(answers[0]?.body);
    }
  });

  it('never quotes the key text it was sent', async () => {
    const passwd = readFileSync('/etc/passwd', 'utf8');
    const answer = await create(strict, {
      type: 'gcp',
      project_id: gcp.project,
      creds: { type: 'service_account', data: passwd },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.detail[0].fields).toEqual([['creds', 'data']]);
    expect(JSON.stringify(answer.body)).not.toContain(passwd.slice(0, 8));
  });

  it('refuses custom endpoints naming the field, without connecting', async () => {
    const cases: [Record<string, unknown>, string[]][] = [
      [{ type: 'aws', endpoint_url: counting.url, creds: awsKey }, ['endpoint_url']],
      [{ type: 'vastai', endpoint_url: counting.url, creds: vastKey }, ['endpoint_url']],
      [{ type: 'runpod', endpoint_url: counting.url, creds: runpodKey }, ['endpoint_url']],
      [
        {
          type: 'gcp',
          project_id: gcp.project,
          endpoint_url: counting.url,
          creds: { type: 'service_account', data: JSON.stringify(gcpKey) },
        },
        ['endpoint_url'],
      ],
      [
        {
          type: 'gcp',
          project_id: gcp.project,
          creds: {
            type: 'service_account',
            data: JSON.stringify({ ...gcpKey, token_uri: `${counting.url}/token` }),
          },
        },
        ['creds', 'data'],
      ],
    ];
    for (const [body, field] of cases) {
      const answer = await create(strict, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.detail).toEqual([
        {
          msg: expect.stringContaining('DSTACK_SERVER_ALLOW_CUSTOM_BACKEND_ENDPOINTS=true'),
          code: 'error',
          fields: [field],
        },
      ]);
    }
    expect(counting.connections()).toBe(0);
  });

  it("refuses the server's own cloud identity (creds type default), global admins included", async () => {
    for (const body of [
      { type: 'aws', creds: { type: 'default' } },
      { type: 'gcp', project_id: 'p', creds: { type: 'default' } },
    ]) {
      const answer = await create(strict, body);
      expect(answer.status).toBe(400);
      expect(answer.body.detail).toEqual([
        {
          msg: expect.stringContaining('DSTACK_SERVER_ALLOW_DEFAULT_CREDS=true'),
          code: 'error',
          fields: [['creds', 'type']],
        },
      ]);
    }
  });

  it('answers the same 400 wherever an allowed custom endpoint leads, never a 500', async () => {
    const targets = [await closedPortUrl(), permissive.url, garbage.url, silent.url, 'http://127.0.0.1:5432'];
    // GCP's token exchange goes to the key's token_uri: there too.
    const gcpBody = (target: string) => ({
      project_id: gcp.project,
      creds: { type: 'service_account', data: JSON.stringify({ ...gcpKey, token_uri: `${target}/token` }) },
    });
    for (const [type, body] of [
      ['aws', () => ({ creds: awsKey })],
      ['vastai', () => ({ creds: vastKey })],
      ['runpod', () => ({ creds: runpodKey })],
      ['gcp', gcpBody],
    ] as const) {
      const answers = [];
      for (const endpoint_url of targets) {
        answers.push(await create(permissive, { type, endpoint_url, ...body(endpoint_url) }));
      }
      for (const [index, answer] of answers.entries()) {
        expect({ type, target: targets[index], ...answer }).toEqual({
          type,
          target: targets[index],
          status: 400,
          body: {
            detail: [
              { msg: PROVIDER_UNREACHABLE_MESSAGE, code: 'invalid_credentials', fields: [['endpoint_url']] },
            ],
          },
        });
      }
    }
  });

  it('lets API requests use default creds when the admin allows them', async () => {
    const answer = await create(permissive, {
      type: 'aws',
      endpoint_url: await closedPortUrl(),
      creds: { type: 'default' },
    });
    // Past the refusal: the server's own chain is tried (and finds no creds, or no endpoint).
    expect(answer.status).toBe(400);
    expect(answer.body.detail[0].msg).not.toContain('DSTACK_SERVER_ALLOW_DEFAULT_CREDS');
  });
});
