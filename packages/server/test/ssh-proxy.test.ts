/**
 * The SSH proxy end to end: a real server (SQLite, then Postgres) with the local backend runs a task through
 * a real shim and runner; upgrades go to `/proxy/ssh/main/{run}` over HTTP as `dstack
 * ssh-proxy` sends them. The runner's SSH server is not what is tested here: for the tunnel,
 * the running job's runner port is pointed at a stand-in runner that switches `/api/ssh` to
 * an echo of raw bytes, so the bytes that cross are the proxy's doing alone.
 */
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JobRuntimeData } from '@dstack/core';
import { DSTACK_RUNNER_HTTP_PORT, deriveRunnerToken } from '@dstack/core/agent-protocol';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import {
  receiveUntil,
  requestUpgrade,
  type UpgradeResult,
} from '../src/http/upgrade-request.test.helpers.js';
import {
  ADMIN_TOKEN,
  applyTask,
  describeEachDatabase,
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
  task,
} from './server-harness.js';

// Real processes start and stop here; nothing is timed, the limits only catch hangs.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

/** What the stand-in runner was asked for on its upgrade. */
interface SeenUpgrade {
  url: string | undefined;
  headers: IncomingHttpHeaders;
}

/** A runner's `/api/ssh` as the contract has it: 101 `Upgrade: ssh`, then (here) an echo. */
async function startStandInRunner(): Promise<{ server: Server; port: number; seen: SeenUpgrade[] }> {
  const seen: SeenUpgrade[] = [];
  const server = createHttpServer((_request, response) => {
    response.writeHead(404).end();
  });
  server.on('upgrade', (request, socket) => {
    seen.push({ url: request.url, headers: request.headers });
    socket.on('error', () => {});
    if (request.url !== '/api/ssh' || request.headers.upgrade !== 'ssh') {
      socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    // What the runner's SSH server says first, sent with the 101 as one write.
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ssh\r\n\r\nSSH-2.0-stand-in\r\n',
    );
    socket.on('data', (chunk) => socket.write(chunk));
    socket.on('end', () => socket.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, seen };
}

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const probe = createHttpServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** The proxy's own error answer to an upgrade: its status, error code and message. */
function answeredError(result: UpgradeResult): { status: number | undefined; code: string; msg: string } {
  if (result.kind !== 'answered') throw new Error('The upgrade switched protocols');
  const error = JSON.parse(result.body) as { detail: Array<{ code: string; msg: string }> };
  return {
    status: result.response.statusCode,
    code: error.detail[0]?.code ?? '',
    msg: error.detail[0]?.msg ?? '',
  };
}

describeEachDatabase('the SSH proxy on the local backend', (databaseUrl) => {
  const temp = makeTempDir();
  let harness: HarnessServer;
  let outsiderToken: string;

  beforeAll(async () => {
    harness = await startHarnessServer({
      databaseUrl: databaseUrl(),
      dir: temp.dir,
      config: localBackendConfig(temp.dir),
    });
    outsiderToken = await harness.createUser('outsider');
  });

  afterAll(async () => {
    await harness.terminateFleetsAndClose();
    temp.remove();
  });

  const sshUrl = (project: string, runName: string, query = '') =>
    `${harness.server.url}/proxy/ssh/${project}/${runName}${query}`;
  const asUser = (token: string) => ({ authorization: `Bearer ${token}`, upgrade: 'ssh' });

  /**
   * Points the runner port of `runName`'s running job at `port`, as if its runner listened
   * there; returns how to point it back (the pipelines keep following the real runner).
   */
  async function pointRunnerAt(runName: string, port: number): Promise<() => Promise<void>> {
    const { db } = harness.server.app;
    const job = await db
      .selectFrom('jobs')
      .innerJoin('runs', 'runs.id', 'jobs.run_id')
      .select(['jobs.id', 'jobs.job_runtime_data'])
      .where('runs.run_name', '=', runName)
      .where('jobs.status', '=', 'running')
      .executeTakeFirstOrThrow();
    const runtime = JSON.parse(job.job_runtime_data ?? '{}') as JobRuntimeData;
    const pointed = { ...runtime, ports: { ...runtime.ports, [String(DSTACK_RUNNER_HTTP_PORT)]: port } };
    const setRuntime = async (data: JobRuntimeData) => {
      await db
        .updateTable('jobs')
        .set({ job_runtime_data: JSON.stringify(data) })
        .where('id', '=', job.id)
        .execute();
    };
    await setRuntime(pointed);
    return () => setRuntime(runtime);
  }

  /** The token the runner of `runName`'s running job requires: derived from its instance's for its task. */
  async function runnerTokenOf(runName: string): Promise<string> {
    const { db, encryption } = harness.server.app;
    const row = await db
      .selectFrom('jobs')
      .innerJoin('runs', 'runs.id', 'jobs.run_id')
      .innerJoin('instances', 'instances.id', 'jobs.instance_id')
      .select(['jobs.id', 'instances.agent_token'])
      .where('runs.run_name', '=', runName)
      .where('jobs.status', '=', 'running')
      .executeTakeFirstOrThrow();
    if (!row.agent_token) throw new Error(`the instance of ${runName} has no agent token`);
    return deriveRunnerToken(encryption.decrypt(row.agent_token), row.id);
  }

  it('answers 503 before the job runs, then joins the client to the runner once it does', async () => {
    await applyTask(harness, task('dev', ['sleep 600']));
    // Just applied: the job is still submitted, far from running.
    const early = await requestUpgrade(sshUrl('main', 'dev'), asUser(ADMIN_TOKEN));
    expect(answeredError(early)).toMatchObject({ status: 503, code: 'service_unavailable' });
    expect(early.kind === 'answered' && early.response.headers['retry-after']).toBe('5');

    await harness.waitForRun('dev', ['running']);
    const runner = await startStandInRunner();
    const restore = await pointRunnerAt('dev', runner.port);
    try {
      const result = await requestUpgrade(
        sshUrl('main', 'dev', '?job_num=0&replica_num=0'),
        asUser(ADMIN_TOKEN),
      );
      if (result.kind !== 'switched')
        throw new Error(`expected 101, got ${result.response.statusCode} ${result.body}`);
      expect(result.response.statusCode).toBe(101);
      expect(result.response.headers).toMatchObject({ connection: 'Upgrade', upgrade: 'ssh' });
      // The runner was asked for its SSH endpoint with its own token; the user's dstack token is
      // not the runner's business.
      expect(runner.seen).toHaveLength(1);
      expect(runner.seen[0]?.url).toBe('/api/ssh');
      expect(runner.seen[0]?.headers).toMatchObject({ connection: 'Upgrade', upgrade: 'ssh' });
      expect(runner.seen[0]?.headers.authorization).not.toContain(ADMIN_TOKEN);
      expect(runner.seen[0]?.headers.authorization).toBe(`Bearer ${await runnerTokenOf('dev')}`);

      const { socket, head } = result;
      await receiveUntil(socket, 'SSH-2.0-stand-in\r\n', head);
      socket.write('SSH-2.0-client\r\n');
      await receiveUntil(socket, 'SSH-2.0-client\r\n');
      // The client ending its side ends the runner's, whose end comes back through the proxy.
      const closed = new Promise((resolve) => socket.once('close', resolve));
      socket.end();
      await closed;
    } finally {
      await restore();
      await new Promise((resolve) => runner.server.close(resolve));
    }
  });

  it('answers 502 when the runner cannot be reached', async () => {
    const restore = await pointRunnerAt('dev', await closedPort());
    try {
      const answer = answeredError(await requestUpgrade(sshUrl('main', 'dev'), asUser(ADMIN_TOKEN)));
      expect(answer).toMatchObject({ status: 502, code: 'bad_gateway' });
      expect(answer.msg).toContain('The runner of job dev-0-0 cannot be reached: ECONNREFUSED');
    } finally {
      await restore();
    }
  });

  it('refuses a client without a valid token or outside the project', async () => {
    const url = sshUrl('main', 'dev');
    const anonymous = await requestUpgrade(url, { upgrade: 'ssh' });
    expect(answeredError(anonymous)).toMatchObject({ status: 403 });
    const badToken = await requestUpgrade(url, asUser('not-a-token'));
    expect(answeredError(badToken)).toMatchObject({ status: 403 });
    // A user of the server who is no member of project main learns nothing of its runs.
    expect(answeredError(await requestUpgrade(url, asUser(outsiderToken)))).toMatchObject({ status: 403 });
    expect(answeredError(await requestUpgrade(sshUrl('main', 'nope'), asUser(outsiderToken)))).toMatchObject({
      status: 403,
    });
  });

  it('answers 404 for an unknown run, job or replica, 400 for a bad query or protocol', async () => {
    const unknownRun = answeredError(await requestUpgrade(sshUrl('main', 'nope'), asUser(ADMIN_TOKEN)));
    expect(unknownRun).toMatchObject({ status: 404, msg: 'Run nope not found in project main' });
    const unknownJob = answeredError(
      await requestUpgrade(sshUrl('main', 'dev', '?job_num=1'), asUser(ADMIN_TOKEN)),
    );
    expect(unknownJob).toMatchObject({ status: 404, msg: 'Run dev has no job 1 in replica 0' });
    const unknownReplica = await requestUpgrade(sshUrl('main', 'dev', '?replica_num=2'), asUser(ADMIN_TOKEN));
    expect(answeredError(unknownReplica)).toMatchObject({
      status: 404,
      msg: 'Run dev has no job 0 in replica 2',
    });

    const badQuery = answeredError(
      await requestUpgrade(sshUrl('main', 'dev', '?job_num=-1'), asUser(ADMIN_TOKEN)),
    );
    expect(badQuery).toMatchObject({ status: 400, msg: 'job_num must be a non-negative integer, got "-1"' });
    const websocket = await requestUpgrade(sshUrl('main', 'dev'), { authorization: `Bearer ${ADMIN_TOKEN}` });
    expect(answeredError(websocket)).toMatchObject({ status: 400, code: 'invalid_request' });

    // Without an upgrade there is nothing to proxy.
    const plain = await fetch(sshUrl('main', 'dev'), { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(plain.status).toBe(426);
    expect(plain.headers.get('upgrade')).toBe('ssh');
    await plain.arrayBuffer();
  });

  it('answers 409 once the run has finished', async () => {
    const stop = await harness.call('/api/project/main/runs/stop', { runs_names: ['dev'], abort: false });
    expect(stop.status).toBe(200);
    await harness.waitForRun('dev', ['terminated', 'done', 'failed']);
    const finished = answeredError(await requestUpgrade(sshUrl('main', 'dev'), asUser(ADMIN_TOKEN)));
    expect(finished).toMatchObject({ status: 409, code: 'conflict' });
    expect(finished.msg).toMatch(/^Run dev is (terminated|done|failed): there is nothing to connect to$/);
  });
});
