/**
 * `utilization_policy` end to end on the local backend (process runtime), on a host whose GPUs are
 * a stand-in for NVIDIA's `nvidia-smi` on the PATH: two A100s, answering the `--query-gpu` queries
 * of the backend, the shim and the runner in CSV, the utilization of GPU i being what the file
 * `gpu<i>.util` says (0 when absent), so a job "uses" its GPU by writing to it. The server samples
 * each job's runner every second. dstack's smallest window is 5 minutes: rather than wait, the
 * test moves the server's clock (the one schedules and utilization windows are read against) so the
 * window began when the jobs were applied; the runner's samples keep their real times.
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { Event, JobMetrics, Run } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { killRunningDstack, requireBuiltDstack, runDstack } from './dstack-cli.js';
import {
  ADMIN_TOKEN,
  applyTask,
  type HarnessServer,
  HOST_RESOURCES,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
  task,
  waitFor,
} from './server-harness.js';

// Real processes start and stop here; nothing is timed, the limits only catch hangs.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

const WINDOW_SECONDS = 300;
const POLICY = { utilization_policy: { min_gpu_utilization: 10, time_window: '5m' } };
const MESSAGE = 'The job GPU utilization below 10% for 300 seconds';

/** The stand-in: `--id=`, `--query-gpu=` and `--format=csv,noheader[,nounits]`, as the real tool takes them. */
function fakeNvidiaSmi(stateDir: string): string {
  return `#!/bin/sh
# A stand-in for NVIDIA's nvidia-smi: two A100-SXM4-80GB answering --query-gpu in CSV.
ids='0 1'
query=''
units=yes
for arg in "$@"; do
  case "$arg" in
    --id=*) ids=$(echo "\${arg#--id=}" | tr ',' ' ') ;;
    --query-gpu=*) query=\${arg#--query-gpu=} ;;
    --format=*nounits*) units=no ;;
    --format=*) ;;
    *) echo "nvidia-smi (stand-in): unsupported argument $arg" >&2; exit 2 ;;
  esac
done
[ -n "$query" ] || { echo 'nvidia-smi (stand-in): only --query-gpu is answered' >&2; exit 2; }
for id in $ids; do
  case "$id" in 0|1) ;; *) echo "No devices were found" >&2; exit 6 ;; esac
  line=''
  for field in $(echo "$query" | tr ',' ' '); do
    case "$field" in
      index) value=$id ;;
      name) value='NVIDIA A100-SXM4-80GB' ;;
      driver_version) value='535.183.01' ;;
      memory.total) value=81920; [ $units = yes ] && value="$value MiB" ;;
      memory.used) value=1024; [ $units = yes ] && value="$value MiB" ;;
      utilization.gpu)
        value=$(cat '${stateDir}'/gpu$id.util 2>/dev/null || echo 0)
        [ $units = yes ] && value="$value %" ;;
      *) echo "Field \\"$field\\" is not a valid field to query." >&2; exit 2 ;;
    esac
    line="\${line:+$line, }$value"
  done
  echo "$line"
done
`;
}

function series(metrics: JobMetrics, name: string): number[] {
  return metrics.metrics.find((metric) => metric.name === name)?.values ?? [];
}

describe('utilization_policy on the local backend with a stand-in nvidia-smi', () => {
  const temp = makeTempDir('dstack-utilization-');
  const gpuState = join(temp.dir, 'gpus');
  const cliEnvironment = { DSTACK_CLI_CONFIG_DIR: join(temp.dir, 'cli') };
  const originalPath = process.env.PATH;
  let harness: HarnessServer;
  /** How far the server's clock is ahead of the real one. */
  let clockOffsetMs = 0;

  beforeAll(async () => {
    requireBuiltDstack();
    const bin = join(temp.dir, 'bin');
    mkdirSync(bin, { recursive: true });
    mkdirSync(gpuState, { recursive: true });
    writeFileSync(join(bin, 'nvidia-smi'), fakeNvidiaSmi(gpuState));
    chmodSync(join(bin, 'nvidia-smi'), 0o755);
    // The job host is this host: the server (which sees its GPUs), the shims it starts and
    // their runners find the tool on the PATH, as they would find NVIDIA's.
    process.env.PATH = `${bin}${delimiter}${originalPath ?? ''}`;
    harness = await startHarnessServer({
      dir: temp.dir,
      config: localBackendConfig(temp.dir),
      env: { DSTACK_SERVER_METRICS_COLLECT_INTERVAL: '1' },
      clock: () => Date.now() + clockOffsetMs,
    });
    mkdirSync(cliEnvironment.DSTACK_CLI_CONFIG_DIR, { recursive: true });
    writeFileSync(
      join(cliEnvironment.DSTACK_CLI_CONFIG_DIR, 'config.yml'),
      stringify({ projects: [{ name: 'main', url: harness.server.url, token: ADMIN_TOKEN, default: true }] }),
    );
  });

  afterAll(async () => {
    killRunningDstack();
    await harness?.terminateFleetsAndClose();
    process.env.PATH = originalPath;
    temp.remove();
  });

  async function jobMetrics(run: string): Promise<JobMetrics> {
    const response = await fetch(`${harness.server.url}/api/project/main/metrics/job/${run}?limit=1000`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(response.status).toBe(200);
    return (await response.json()) as JobMetrics;
  }

  const gpuTask = (name: string, commands: string[]) =>
    task(name, commands, { resources: { ...HOST_RESOURCES, gpu: 1 }, ...POLICY });

  it('terminates a job whose GPU stayed idle for the window, with dstack reason; a busy one runs on', async () => {
    const appliedAt = Date.now();
    const idle = await applyTask(harness, gpuTask('idle-gpu', ['sleep 600']));
    expect(idle.jobs[0]?.job_spec.utilization_policy).toEqual({ min_gpu_utilization: 10, time_window: 300 });
    await harness.waitForRun('idle-gpu', ['running']);
    // The busy job idles until told, then uses the GPU it holds (the one CUDA_VISIBLE_DEVICES names).
    const go = join(gpuState, 'busy.go');
    await applyTask(
      harness,
      gpuTask('busy-gpu', [
        `until [ -e '${go}' ]; do sleep 0.2; done`,
        `echo 95 > '${gpuState}'/gpu$CUDA_VISIBLE_DEVICES.util`,
        'sleep 600',
      ]),
    );
    await harness.waitForRun('busy-gpu', ['running']);
    const busySamples = async () => series(await jobMetrics('busy-gpu'), 'gpu_util_percent_gpu0');
    await waitFor('an idle sample of the busy job', async () =>
      (await busySamples()).includes(0) ? true : null,
    );
    writeFileSync(go, '');

    // Samples of both GPUs come in: the idle one at 0; the busy one at 0, then at 95.
    await waitFor('GPU samples of both jobs', async () => {
      const idleSeries = series(await jobMetrics('idle-gpu'), 'gpu_util_percent_gpu0');
      return idleSeries.length >= 3 && (await busySamples()).includes(95) ? true : null;
    });
    expect(series(await jobMetrics('idle-gpu'), 'gpu_util_percent_gpu0').every((value) => value === 0)).toBe(
      true,
    );
    // Seconds of samples do not cover a 5-minute window: nothing is decided yet.
    for (const name of ['idle-gpu', 'busy-gpu']) {
      expect((await harness.call<Run>('/api/project/main/runs/get', { run_name: name })).body.status).toBe(
        'running',
      );
    }

    // The server's clock moves on: the window now began when the jobs were applied.
    clockOffsetMs = WINDOW_SECONDS * 1000 - (Date.now() - appliedAt);
    const movedAt = Date.now();
    const ended = await harness.waitForRun('idle-gpu', ['terminated', 'failed', 'done']);
    expect(ended.latest_job_submission).toMatchObject({
      status: 'terminated',
      termination_reason: 'terminated_due_to_utilization_policy',
      termination_reason_message: MESSAGE,
    });

    // The busy job was judged on the same clock: under the threshold at first, not for the whole
    // window; two samples after the move, it still runs.
    await waitFor('two samples of the busy job after the clock moved', async () => {
      const stamps = (await jobMetrics('busy-gpu')).metrics[0]?.timestamps ?? [];
      return stamps.filter((stamp) => Date.parse(stamp) > movedAt).length >= 2 ? true : null;
    });
    const busy = await harness.call<Run>('/api/project/main/runs/get', { run_name: 'busy-gpu' });
    expect(busy.body.status).toBe('running');

    // What the user sees: `dstack ps` and the events.
    const ps = await runDstack(['ps', '-a', '-v'], { env: cliEnvironment });
    expect(ps.code, ps.stderr).toBe(0);
    const idleRow = ps.stdout.split('\n').find((line) => line.startsWith('idle-gpu '));
    expect(idleRow).toMatch(/\bterminated\b/);
    expect(idleRow).toContain(MESSAGE);
    const json = await runDstack(['ps', '-a', '--format', 'json'], { env: cliEnvironment });
    const listed = (JSON.parse(json.stdout) as Run[]).find((run) => run.run_spec.run_name === 'idle-gpu');
    expect(listed?.latest_job_submission?.termination_reason).toBe('terminated_due_to_utilization_policy');

    const expectedEvent = `Job status changed RUNNING -> TERMINATING. Termination reason: TERMINATED_DUE_TO_UTILIZATION_POLICY (${MESSAGE})`;
    const events = await harness.call<Event[]>('/api/events/list', {
      within_runs: [idle.id],
      ascending: true,
    });
    expect(events.body.map((event) => event.message)).toContain(expectedEvent);
    const printed = await runDstack(['event', '--run', 'idle-gpu'], { env: cliEnvironment });
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toContain(expectedEvent);

    await harness.call('/api/project/main/runs/stop', { runs_names: ['busy-gpu'], abort: true });
    await harness.waitForRun('busy-gpu', ['terminated', 'failed', 'done']);
  });

  it('refuses the policy at plan time when no offer has a GPU', async () => {
    const file = join(temp.dir, 'cpu-only.dstack.yml');
    writeFileSync(
      file,
      stringify({ type: 'task', name: 'cpu-only', commands: ['true'], resources: { gpu: 0 }, ...POLICY }),
    );
    const applied = await runDstack(['apply', '-f', file, '-y'], { cwd: temp.dir, env: cliEnvironment });
    expect(applied.code).not.toBe(0);
    expect(applied.stderr).toContain('utilization_policy: none of the 1 offers has a GPU');
    const run = await harness.call('/api/project/main/runs/get', { run_name: 'cpu-only' });
    expect(run.status).toBe(400);
  });
});
