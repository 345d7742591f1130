/**
 * Service replicas end to end on the local backend, through the real server and its proxy
 * (SQLite): scaling between 0 and 3 replicas on requests per second, probes gating traffic,
 * a rolling update under load, rate limits. The service is a small Python HTTP server that
 * binds its port with SO_REUSEPORT, so several replicas (processes on this one host) can share
 * it as they would each have theirs on separate instances; it stops accepting on SIGTERM and
 * finishes the requests it holds. Nothing is timed: the limits only catch hangs.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { FINISHED_JOB_STATUSES, type Run } from '@dstack/core';
import { findFreePort } from '@dstack/shim';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import {
  ADMIN_TOKEN,
  applyTask,
  type HarnessServer,
  HOST_RESOURCES,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
  waitFor,
} from './server-harness.js';

vi.setConfig({ testTimeout: 180_000, hookTimeout: 60_000 });

/** `/health` answers 200 while `{dir}/healthy` exists; `/` answers `{VERSION} {pid}`; each request but `/health` is appended to `{dir}/served`. */
const SERVICE_SCRIPT = `
import http.server, os, signal, socket, sys, threading
port, folder = int(sys.argv[1]), sys.argv[2]
version = os.environ.get('VERSION', 'v0')
class Server(http.server.ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True
    def server_bind(self):
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *args):
        pass
    def do_GET(self):
        if self.path == '/health':
            # A probe naming a version is answered healthy by that version only: replicas share the
            # port here, so another replica's process may take the connection.
            asked = self.headers.get('x-version')
            healthy = os.path.exists(os.path.join(folder, 'healthy')) and asked in (None, version)
            status = 200 if healthy else 503
        else:
            status = 200
            with open(os.path.join(folder, 'served'), 'a') as served:
                served.write(self.path + '\\n')
        body = ('%s %d' % (version, os.getpid())).encode()
        self.send_response(status)
        if stopping.is_set():
            # Stopping: finish this answer, then close the kept-alive connection.
            self.close_connection = True
            self.send_header('connection', 'close')
        self.send_header('content-length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
stopping = threading.Event()
server = Server(('127.0.0.1', port), Handler)
def stop_accepting():
    server.shutdown()
    server.socket.close()
def stop(*_):
    stopping.set()
    threading.Thread(target=stop_accepting).start()
signal.signal(signal.SIGTERM, stop)
server.serve_forever()
server.server_close()
`;

describe('service replicas on the local backend', () => {
  const temp = makeTempDir('dstack-scaling-');
  const script = join(temp.dir, 'service.py');
  let harness: HarnessServer;

  beforeAll(async () => {
    writeFileSync(script, SERVICE_SCRIPT);
    harness = await startHarnessServer({ dir: temp.dir, config: localBackendConfig(temp.dir) });
  });

  // The host has room for two replicas: a run a failed test left going would fail the next ones too.
  afterEach(async () => {
    await harness?.abortActiveRuns();
  });

  afterAll(async () => {
    await harness?.terminateFleetsAndClose();
    temp.remove();
  });

  const proxyUrl = (runName: string, rest = '') =>
    `${harness.server.url}/proxy/services/main/${runName}/${rest}`;
  const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };

  /** A service running the script on a fresh port, its folder made. */
  function service(name: string, extra: Record<string, unknown> = {}) {
    const folder = join(temp.dir, name);
    rmSync(folder, { recursive: true, force: true });
    return {
      folder,
      configuration: (more: Record<string, unknown> = {}) => ({
        type: 'service',
        name,
        commands: [`mkdir -p '${folder}' && exec python3 '${script}' $SERVICE_PORT '${folder}'`],
        resources: HOST_RESOURCES,
        ...extra,
        ...more,
      }),
    };
  }

  /** Stops the run and waits until it has ended: the host has room for two replicas only. */
  async function stopRun(runName: string): Promise<void> {
    await harness.call('/api/project/main/runs/stop', { runs_names: [runName], abort: false });
    await harness.waitForRun(runName, ['terminated', 'failed', 'done'], 60_000);
  }

  /** The run's jobs whose latest submission is running, with their deployment. */
  async function runningJobs(runName: string): Promise<Array<{ replica: number; submission: number }>> {
    const run = (await harness.call<Run>('/api/project/main/runs/get', { run_name: runName })).body;
    return run.jobs.flatMap((job) => {
      const latest = job.job_submissions.at(-1);
      return latest?.status === 'running'
        ? [{ replica: job.job_spec.replica_num, submission: latest.submission_num }]
        : [];
    });
  }

  /** GETs `url` from `workers` clients in turn until `done()` or `limit` requests; the statuses seen. */
  async function load(url: string, workers: number, limit: number, done: () => boolean) {
    const statuses = new Map<number | string, number>();
    const bodies: string[] = [];
    let sent = 0;
    await Promise.all(
      Array.from({ length: workers }, async () => {
        while (!done() && sent < limit) {
          sent += 1;
          let status: number | string;
          try {
            const response = await fetch(url, { headers: auth });
            bodies.push(await response.text());
            status = response.status;
          } catch (error) {
            // Counted as a lost request, with why.
            status = String((error as Error).cause ?? error);
          }
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }
      }),
    );
    return { statuses: Object.fromEntries(statuses), bodies, sent };
  }

  it('scales 0..3 on requests per second, serves every request, and scales back to zero', async () => {
    const port = await findFreePort();
    const { configuration } = service('scaled');
    const run = await applyTask(
      harness,
      configuration({
        port,
        env: { SERVICE_PORT: String(port) },
        replicas: '0..3',
        scaling: { metric: 'rps', target: 5, window: '2s', scale_up_delay: 0, scale_down_delay: '2s' },
      }),
    );
    expect(run.jobs).toEqual([]);

    // The first request waits for a replica instead of failing.
    const first = await fetch(proxyUrl('scaled'), { headers: auth });
    expect(first.status).toBe(200);

    let scaledUp = false;
    const watcher = (async () => {
      while (!scaledUp) {
        scaledUp = (await runningJobs('scaled')).length >= 2;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const result = await load(proxyUrl('scaled'), 8, 20_000, () => scaledUp);
    scaledUp = true;
    await watcher;
    expect(result.bodies.filter((body) => !/^v\d /.test(body)).slice(0, 3)).toEqual([]);
    expect(Object.keys(result.statuses)).toEqual(['200']);
    expect((await runningJobs('scaled')).length).toBeGreaterThanOrEqual(2);

    // Idle: back to zero (every replica's latest submission has ended, none is still starting),
    // then a request brings one replica back.
    await waitFor(
      'the service to scale to zero',
      async () => {
        const run = (await harness.call<Run>('/api/project/main/runs/get', { run_name: 'scaled' })).body;
        const active = run.jobs.filter((job) => {
          const latest = job.job_submissions.at(-1);
          return latest !== undefined && !FINISHED_JOB_STATUSES.includes(latest.status);
        });
        return active.length === 0 ? true : null;
      },
      90_000,
    );
    const again = await fetch(proxyUrl('scaled'), { headers: auth });
    const text = await again.text();
    expect(text).toMatch(/^v0 /);
    await stopRun('scaled');
  });

  it('keeps the replica a held request woke wanted until that replica answers', async () => {
    // The test plays the replica's server (the job only sleeps): it holds the proxy's request, so
    // the request is known to be past its wait and at its replica, not yet answered.
    const port = await findFreePort();
    let answer: ((text: string) => void) | undefined;
    const arrived = new Promise<void>((resolve) => {
      const standIn = createServer((_request, response) => {
        answer = (text) => response.end(text);
        resolve();
      });
      standIn.listen(port, '127.0.0.1');
      onTestFinished(() => {
        standIn.closeAllConnections();
        standIn.close();
      });
    });
    const { configuration } = service('held');
    const run = await applyTask(
      harness,
      configuration({
        port,
        commands: ['sleep 600'],
        replicas: '0..1',
        scaling: { metric: 'rps', target: 5, window: '2s', scale_up_delay: 0, scale_down_delay: '2s' },
      }),
    );
    const response = fetch(proxyUrl('held'), { headers: auth });
    await arrived;
    // Still counted as waiting: the autoscaler keeps the replica, whatever the request rate says.
    const stats = harness.server.app.caches.services.stats;
    expect(stats.waiting(run.id)).toBe(1);
    answer?.('from the stand-in');
    expect(await (await response).text()).toBe('from the stand-in');
    expect(stats.waiting(run.id)).toBe(0);
    await stopRun('held');
  });

  it('sends requests only to a ready replica, replaces one that fails, and limits rates', async () => {
    const port = await findFreePort();
    const { folder, configuration } = service('probed');
    await applyTask(
      harness,
      configuration({
        port,
        env: { SERVICE_PORT: String(port) },
        probes: [{ type: 'http', url: '/health', interval: 1, timeout: 1, ready_after: 2 }],
        rate_limits: [
          { prefix: '/limited', rps: 0.1, burst: 1, key: { type: 'header', header: 'x-client' } },
        ],
      }),
    );
    const [first] = await waitFor('the replica to run', async () => {
      const jobs = await runningJobs('probed');
      return jobs.length === 1 ? jobs : null;
    });
    // Running, its probe failing: no request reaches it.
    for (let index = 0; index < 3; index += 1) {
      const response = await fetch(proxyUrl('probed', 'early'), { headers: auth });
      expect(response.status).toBe(503);
    }
    expect(existsSync(join(folder, 'served'))).toBe(false);

    writeFileSync(join(folder, 'healthy'), '');
    await waitFor('the replica to be ready', async () => {
      const response = await fetch(proxyUrl('probed', 'ready'), { headers: auth });
      return response.status === 200 ? true : null;
    });
    expect(readFileSync(join(folder, 'served'), 'utf8')).toBe('/ready\n');

    // Rate limit per x-client: burst 1 allows two at once, the third waits.
    const limited = (client: string) =>
      fetch(proxyUrl('probed', 'limited'), { headers: { ...auth, 'x-client': client } });
    expect((await limited('a')).status).toBe(200);
    expect((await limited('a')).status).toBe(200);
    const refused = await limited('a');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await limited('b')).status).toBe(200);

    // Its probe fails: it gets no more requests, then it is replaced by a new submission.
    rmSync(join(folder, 'healthy'));
    await waitFor('the failing replica to be taken out', async () => {
      const response = await fetch(proxyUrl('probed', 'out'), { headers: auth });
      return response.status === 503 ? true : null;
    });
    const servedBefore = readFileSync(join(folder, 'served'), 'utf8');
    expect((await fetch(proxyUrl('probed', 'nope'), { headers: auth })).status).toBe(503);
    expect(readFileSync(join(folder, 'served'), 'utf8')).toBe(servedBefore);
    await waitFor(
      'the replica to be replaced',
      async () => {
        const jobs = await runningJobs('probed');
        const replacement = jobs[0];
        const another =
          replacement !== undefined &&
          (replacement.replica !== first?.replica || replacement.submission !== first?.submission);
        return jobs.length === 1 && another ? true : null;
      },
      60_000,
    );
    writeFileSync(join(folder, 'healthy'), '');
    await waitFor('the new replica to be ready', async () => {
      const response = await fetch(proxyUrl('probed', 'back'), { headers: auth });
      return response.status === 200 ? true : null;
    });
    await stopRun('probed');
  });

  it('rolls a changed service out under load without losing a request', async () => {
    const port = await findFreePort();
    const { folder, configuration } = service('rolled');
    const config = (version: string) =>
      configuration({
        port,
        env: { SERVICE_PORT: String(port), VERSION: version },
        // Ready once this version itself answered (not the old replica on the shared port), and
        // then no longer probed, as a mis-taken probe of the old one would unready it.
        probes: [
          {
            type: 'http',
            url: '/health',
            interval: 1,
            timeout: 1,
            until_ready: true,
            headers: [{ name: 'x-version', value: version }],
          },
        ],
        commands: [
          `mkdir -p '${folder}' && touch '${folder}/healthy' && exec python3 '${script}' $SERVICE_PORT '${folder}'`,
        ],
      });
    await applyTask(harness, config('v1'));
    await waitFor('v1 to serve', async () => {
      const response = await fetch(proxyUrl('rolled'), { headers: auth });
      return response.status === 200 ? true : null;
    });

    let rolled = false;
    const loading = load(proxyUrl('rolled'), 4, 50_000, () => rolled);
    const updated = await applyTask(harness, config('v2'));
    expect(updated.run_spec.configuration).toMatchObject({ env: { VERSION: 'v2' } });
    await waitFor(
      'v1 to be drained',
      async () => {
        const run = (await harness.call<Run>('/api/project/main/runs/get', { run_name: 'rolled' })).body;
        const latest = run.jobs.map((job) => job.job_submissions.at(-1)?.status);
        // v2's replica runs and v1's has ended.
        const v1Gone =
          latest.length === 2 &&
          latest.filter((status) => status === 'running').length === 1 &&
          latest.includes('terminated');
        return v1Gone ? true : null;
      },
      90_000,
    );
    // A few more requests after the old replica is gone, then the load stops.
    const after = await load(proxyUrl('rolled'), 1, 5, () => false);
    rolled = true;
    const during = await loading;
    expect(during.bodies.filter((body) => !/^v\d /.test(body))).toEqual([]);
    expect(Object.keys(during.statuses)).toEqual(['200']);
    expect(Object.keys(after.statuses)).toEqual(['200']);
    expect(after.bodies.every((body) => body.startsWith('v2 '))).toBe(true);
    expect(during.bodies.some((body) => body.startsWith('v1 '))).toBe(true);
    await stopRun('rolled');
  });

  it('runs every replica group with its own commands, and stops a group removed on re-apply', async () => {
    const port = await findFreePort();
    const { configuration } = service('grouped');
    const folder = join(temp.dir, 'grouped');
    const serve = (version: string) =>
      `mkdir -p '${folder}' && touch '${folder}/started-${version}' && VERSION=${version} exec python3 '${script}' $SERVICE_PORT '${folder}'`;
    const groups = [
      { name: 'blue', count: 1, commands: [serve('blue')], resources: HOST_RESOURCES },
      { name: 'green', count: 1, commands: [serve('green')], resources: HOST_RESOURCES },
    ];
    const config = (replicas: unknown[]) =>
      configuration({ commands: [], port, env: { SERVICE_PORT: String(port) }, replicas });
    const answerOf = async () => {
      const response = await fetch(proxyUrl('grouped'), { headers: auth });
      const text = await response.text();
      return response.status === 200 ? text : null;
    };
    const run = await applyTask(harness, config(groups));
    expect(run.jobs.map((job) => [job.job_spec.replica_group, job.job_spec.replica_num])).toEqual([
      ['blue', 0],
      ['green', 1],
    ]);
    await waitFor(
      'both groups to run',
      async () => ((await runningJobs('grouped')).length === 2 ? true : null),
      60_000,
    );
    // Each group ran its own commands; the proxy answers from them once one listens (a running job
    // has started its commands, not necessarily bound its port; on this one host the replicas
    // share the port, so which one answers is the kernel's choice).
    const answer = await waitFor('a replica to answer through the proxy', answerOf, 30_000);
    expect(answer).toMatch(/^(blue|green) /);
    expect(existsSync(join(folder, 'started-blue'))).toBe(true);
    expect(existsSync(join(folder, 'started-green'))).toBe(true);

    // Without the green group, its replica goes; blue's is rolled to the new deployment.
    await applyTask(harness, config(groups.slice(0, 1)));
    await waitFor(
      'only a blue replica of the new deployment to run',
      async () => {
        const current = (await harness.call<Run>('/api/project/main/runs/get', { run_name: 'grouped' })).body;
        const running = current.jobs.filter((job) => job.job_submissions.at(-1)?.status === 'running');
        return running.length === 1 &&
          running[0]?.job_spec.replica_group === 'blue' &&
          running[0].job_spec.replica_num === 2
          ? true
          : null;
      },
      90_000,
    );
    expect(await waitFor('the blue replica to answer through the proxy', answerOf, 30_000)).toMatch(/^blue /);
    await stopRun('grouped');
  });
});
