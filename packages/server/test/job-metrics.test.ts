/**
 * Job metrics end to end on the local backend (process runtime): a real job burns CPU and holds
 * memory for a few seconds; the server samples its runner every second, `metrics/job/{run}`
 * (dstack's GET) shows CPU and memory rising and falling, `dstack metrics` prints them, and
 * `GET /metrics` (behind its token) passes `promtool check metrics` and is scraped by a real
 * Prometheus, which stores the job's series.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { JobMetrics } from '@dstack/core';
import { findFreePort } from '@dstack/shim';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { killRunningDstack, requireBuiltDstack, runDstack, startDstack } from './dstack-cli.js';
import { dockerMissing } from './emulated-hosts-harness.js';
import {
  ADMIN_TOKEN,
  applyTask,
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
  task,
  waitFor,
} from './server-harness.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const SCRAPE_TOKEN = 'prometheus-scrape-token';
const BUILD_TEST_IMAGE = fileURLToPath(new URL('../../shim/test-image/build-test-image.sh', import.meta.url));
/** The shim's offline Docker test image (a static busybox). */
const TEST_IMAGE = 'dstack-test/runner-busybox:v2';
const MIB = 1024 * 1024;
/** Under CI the tools must be there (`.ci/run` installs Debian's `prometheus`); elsewhere their cases skip. */
const promtool = await promisify(execFile)('promtool', ['--version']).then(
  () => true,
  () => false,
);
const prometheusMissing = !promtool && process.env.CI !== 'true';

/**
 * The job: quiet for 2 s, then for 3 s it holds 200 MiB it wrote to and burns a CPU, then quiet
 * again until stopped. (The host's node: the process runtime runs jobs on this host.)
 */
const BURN_SCRIPT =
  'const held = Buffer.alloc(200 * 1024 * 1024, 1); const end = Date.now() + 3000; ' +
  'while (Date.now() < end) held[0]++;';
const BURN_COMMANDS = ['sleep 2', `'${process.execPath}' -e '${BURN_SCRIPT}'`, 'sleep 600'];

function series(metrics: JobMetrics, name: string): number[] {
  return metrics.metrics.find((metric) => metric.name === name)?.values ?? [];
}

describe('job metrics and Prometheus on the local backend', () => {
  const temp = makeTempDir('dstack-job-metrics-');
  const cliEnvironment = { DSTACK_CLI_CONFIG_DIR: join(temp.dir, 'cli') };
  let harness: HarnessServer;
  let prometheus: ChildProcess | undefined;

  beforeAll(async () => {
    requireBuiltDstack();
    harness = await startHarnessServer({
      dir: join(temp.dir, 'server'),
      config: {
        projects: [
          ...localBackendConfig(temp.dir).projects!,
          {
            name: 'docker',
            backends: [
              { type: 'local', runtime: 'docker', instances_dir: join(temp.dir, 'docker-instances') },
            ],
          },
        ],
      },
      env: {
        DSTACK_SERVER_METRICS_COLLECT_INTERVAL: '1',
        DSTACK_ENABLE_PROMETHEUS_METRICS: '1',
        DSTACK_PROMETHEUS_AUTH_TOKEN: SCRAPE_TOKEN,
      },
    });
    mkdirSync(cliEnvironment.DSTACK_CLI_CONFIG_DIR, { recursive: true });
    writeFileSync(
      join(cliEnvironment.DSTACK_CLI_CONFIG_DIR, 'config.yml'),
      stringify({ projects: [{ name: 'main', url: harness.server.url, token: ADMIN_TOKEN, default: true }] }),
    );
  });

  /** The harness ends project `main`'s fleets; the `docker` project's (a shim and its container) go here. */
  async function endDockerProjectFleets(): Promise<void> {
    const active = await harness.call<Array<{ run_spec: { run_name: string } }>>('/api/runs/list', {
      project_name: 'docker',
      only_active: true,
    });
    if (active.body.length > 0) {
      await harness.call('/api/project/docker/runs/stop', {
        runs_names: active.body.map((run) => run.run_spec.run_name),
        abort: true,
      });
    }
    await waitFor('the docker project fleets to be gone', async () => {
      const fleets = (
        await harness.call<Array<{ name: string; status: string }>>('/api/project/docker/fleets/list')
      ).body;
      if (fleets.length === 0) return true;
      const standing = fleets.filter((fleet) => fleet.status !== 'terminating');
      if (standing.length > 0) {
        await harness.call('/api/project/docker/fleets/delete', {
          names: standing.map((fleet) => fleet.name),
        });
      }
      return null;
    });
  }

  afterAll(async () => {
    killRunningDstack();
    prometheus?.kill('SIGKILL');
    if (harness) await endDockerProjectFleets();
    await harness?.terminateFleetsAndClose();
    temp.remove();
  });

  const getMetrics = async (query: string, token = ADMIN_TOKEN, project = 'main', run = 'burner') => {
    const response = await fetch(`${harness.server.url}/api/project/${project}/metrics/job/${run}?${query}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return { status: response.status, body: (await response.json()) as JobMetrics };
  };

  it("samples a running job: CPU and memory rise while it works and fall after, in dstack's shapes", async () => {
    await applyTask(harness, task('burner', BURN_COMMANDS));
    await harness.waitForRun('burner', ['running']);

    // Until the samples show the burst and the quiet after it (one sample a second). The burst's
    // share of a CPU depends on what else the machine runs; the quiet is near zero whatever it runs.
    let last: JobMetrics | null = null;
    const metrics = await waitFor(
      'samples of the burst and of the quiet after it',
      async () => {
        const answer = await getMetrics('limit=100');
        expect(answer.status).toBe(200);
        last = answer.body;
        const cpu = series(answer.body, 'cpu_usage_percent');
        // Latest first: a quiet sample after a busy one.
        const busyAt = cpu.findIndex((value) => value >= 25);
        return busyAt > 0 && cpu.slice(0, busyAt).some((value) => value <= 5) ? answer.body : null;
      },
      40_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; last answer: ${JSON.stringify(last)}`);
    });
    const names = metrics.metrics.map((metric) => metric.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'cpu_usage_percent',
        'memory_usage_bytes',
        'memory_working_set_bytes',
        'cpus_detected_num',
        'memory_total_bytes',
        'gpus_detected_num',
      ]),
    );
    for (const metric of metrics.metrics) {
      expect(metric.values).toHaveLength(metric.timestamps.length);
      expect(Number.isNaN(Date.parse(metric.timestamps[0]!))).toBe(false);
    }
    // This host has no GPU tool: no GPUs, and no GPU series.
    expect(series(metrics, 'gpus_detected_num')[0]).toBe(0);
    expect(names.some((name) => name.startsWith('gpu_util_percent_gpu'))).toBe(false);
    const workingSet = series(metrics, 'memory_working_set_bytes');
    expect(Math.max(...workingSet)).toBeGreaterThanOrEqual(200 * MIB);
    expect(Math.min(...workingSet)).toBeLessThan(100 * MIB);
    expect(series(metrics, 'memory_usage_bytes')[0]).toBeGreaterThan(0);
    const stamps = metrics.metrics[0]!.timestamps.map((stamp) => Date.parse(stamp));
    expect(stamps).toEqual([...stamps].sort((a, b) => b - a));

    // dstack's default: the one latest sample; `before` pages back; bad input is named.
    const latest = await getMetrics('');
    expect(latest.body.metrics[0]!.timestamps).toHaveLength(1);
    const before = await getMetrics(
      `limit=2&before=${encodeURIComponent(metrics.metrics[0]!.timestamps[0]!)}`,
    );
    expect(before.body.metrics[0]!.timestamps).toEqual(metrics.metrics[0]!.timestamps.slice(1, 3));
    const refused = await fetch(`${harness.server.url}/api/project/main/metrics/job/burner?limit=many`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(await refused.json())).toContain('limit');
    const missing = await getMetrics('job_num=3');
    expect(missing.status).toBe(400);
  });

  it.skipIf(prometheusMissing)(
    "`/metrics` answers only with its token, passes promtool, and a real Prometheus stores the job's series",
    async () => {
      const scrape = (token?: string) =>
        fetch(
          `${harness.server.url}/metrics`,
          token ? { headers: { authorization: `Bearer ${token}` } } : {},
        );
      expect((await scrape()).status).toBe(403);
      expect((await scrape(ADMIN_TOKEN)).status).toBe(403);
      const answer = await scrape(SCRAPE_TOKEN);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      const text = await answer.text();
      expect(text).toMatch(/^dstack_job_cpu_time_seconds_total\{[^}]*dstack_run_name="burner"[^}]*\} \d/m);
      expect(text).toMatch(/^dstack_job_memory_working_set_bytes\{[^}]*dstack_run_name="burner"/m);
      expect(text).toMatch(/^dstack_instance_price_dollars_per_hour\{[^}]*dstack_backend="local"[^}]*\} /m);
      expect(text).toMatch(
        /^dstack_run_count_total\{dstack_project_name="main",dstack_user_name="admin"\} [1-9]/m,
      );

      // promtool reads the exposition from stdin and prints each problem it finds. dstack's own
      // names of three gauges end in `_count`, which its lint reserves for histograms: those
      // lines, and only those, are expected (Prometheus stores the series all the same).
      const checked = await new Promise<string>((resolve) => {
        const child = execFile('promtool', ['check', 'metrics'], (_error, stdout, stderr) =>
          resolve(stdout + stderr),
        );
        child.stdin?.end(text);
      });
      const dstackNames =
        /^dstack_(instance_gpu|job_gpu|job_cpu)_count non-histogram and non-summary metrics should not have "_count" suffix$/;
      const problems = checked
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line !== '' && !dstackNames.test(line));
      expect(problems).toEqual([]);

      // A real Prometheus scraping every second, until it has stored the job's memory series.
      const port = await findFreePort();
      const dir = join(temp.dir, 'prometheus');
      mkdirSync(dir, { recursive: true });
      const serverAddress = new URL(harness.server.url).host;
      writeFileSync(
        join(dir, 'prometheus.yml'),
        stringify({
          global: { scrape_interval: '1s' },
          scrape_configs: [
            {
              job_name: 'dstack',
              authorization: { type: 'Bearer', credentials: SCRAPE_TOKEN },
              static_configs: [{ targets: [serverAddress] }],
            },
          ],
        }),
      );
      prometheus = spawn(
        'prometheus',
        [
          `--config.file=${join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
        ],
        { stdio: 'ignore' },
      );
      const query = 'dstack_job_memory_working_set_bytes{dstack_run_name="burner"}';
      const stored = await waitFor(
        'Prometheus to store the job series',
        async () => {
          const response = await fetch(
            `http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(query)}`,
          ).catch(() => null);
          if (response?.status !== 200) return null;
          const body = (await response.json()) as {
            data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
          };
          return body.data.result.length > 0 ? body.data.result : null;
        },
        20_000,
      );
      expect(stored[0]!.metric).toMatchObject({
        dstack_run_name: 'burner',
        dstack_project_name: 'main',
        job: 'dstack',
      });
      expect(Number(stored[0]!.value[1])).toBeGreaterThan(0);
      prometheus.kill('SIGTERM');
    },
  );

  it("`dstack metrics` prints the job's CPU and memory; -w refreshes until the run ends", async () => {
    const printed = await runDstack(['metrics', 'burner'], { env: cliEnvironment });
    expect(printed.stderr).toBe('');
    expect(printed.code).toBe(0);
    expect(printed.stdout).toMatch(/^NAME\s+STATUS\s+CPU\s+MEMORY\s+GPU\s*$/m);
    expect(printed.stdout).toMatch(
      /^burner\s+running\s+\d+%\s+\d+(\.\d+)?(MB|GB)\/\d+(\.\d+)?(MB|GB)\s+-\s*$/m,
    );

    const watching = startDstack(['metrics', 'burner', '-w'], { env: cliEnvironment });
    // Two refreshes at least (seen, not waited for by the clock), then the run ends and so does the command.
    await waitFor(
      'two refreshes of dstack metrics -w',
      () => ((watching.output().match(/^NAME\s+STATUS/gm)?.length ?? 0) >= 2 ? true : null),
      60_000,
    );
    const stopped = await harness.call('/api/project/main/runs/stop', {
      runs_names: ['burner'],
      abort: false,
    });
    expect(stopped.status).toBe(200);
    const watched = await watching.result;
    expect(watched.code).toBe(0);
    expect(watched.stdout.match(/^NAME\s+STATUS/gm)?.length).toBeGreaterThanOrEqual(2);
    expect(watched.stdout).toMatch(/^burner\s+(terminated|terminating)\s/m);
  });

  it.skipIf(dockerMissing)(
    "in a container (Docker runtime) the figures are the container's cgroup's",
    async () => {
      await promisify(execFile)('bash', [BUILD_TEST_IMAGE], { timeout: 300_000 });
      const applied = await harness.call('/api/project/docker/runs/apply', {
        plan: {
          run_spec: {
            configuration: task(
              'burner-in-docker',
              [
                'sleep 2',
                'end=$(( $(date +%s) + 4 )); while [ "$(date +%s)" -lt "$end" ]; do :; done',
                'sleep 600',
              ],
              { image: TEST_IMAGE },
            ),
          },
        },
      });
      expect(applied.status).toBe(200);
      const metrics = await waitFor(
        'a busy sample from the container',
        async () => {
          const answer = await getMetrics('limit=100', ADMIN_TOKEN, 'docker', 'burner-in-docker');
          if (answer.status !== 200) return null;
          return series(answer.body, 'cpu_usage_percent').some((value) => value >= 25) ? answer.body : null;
        },
        40_000,
      );
      // The container holds the runner (node) besides the job: its cgroup's memory is tens of MiB.
      expect(series(metrics, 'memory_usage_bytes')[0]).toBeGreaterThan(10 * MIB);
      expect(series(metrics, 'memory_working_set_bytes')[0]).toBeGreaterThan(10 * MIB);
      const stopped = await harness.call('/api/project/docker/runs/stop', {
        runs_names: ['burner-in-docker'],
        abort: true,
      });
      expect(stopped.status).toBe(200);
    },
  );
});
