/**
 * Job metrics on the server: the series dstack's `metrics/job` answers (CPU as a rate between
 * samples, GPUs absent when unreadable), the job-running pass sampling a real runner, the
 * retention of samples, and `/metrics` over the database on both dialects.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Resources } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { JobsTable, RunsTable } from '../db/schema.js';
import { createPipelineHarness, type PipelineHarness } from '../testing/pipeline-harness.test.helpers.js';
import { jobMetricsOf } from './job-metrics.js';
import { type JobMetricsPoint, selectJobMetricsPoints, storeJobMetricsPoint } from './job-metrics-points.js';
import { deleteExpiredJobMetrics } from './metrics-retention.js';
import { collectPrometheusMetrics } from './prometheus-metrics.js';
import { renderPrometheusText } from './prometheus-text.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const MIB = 1024 * 1024;
const SECOND_MICRO = 1_000_000;

function point(seconds: number, fields: Partial<JobMetricsPoint> = {}): JobMetricsPoint {
  return {
    job_id: 'job',
    timestamp_micro: 1_800_000_000 * SECOND_MICRO + seconds * SECOND_MICRO,
    cpu_usage_micro: 0,
    memory_usage_bytes: 100 * MIB,
    memory_working_set_bytes: 80 * MIB,
    gpus_memory_usage_bytes: '[]',
    gpus_util_percent: '[]',
    ...fields,
  };
}

const TWO_GPUS: Resources = {
  cpus: 8,
  memory_mib: 32 * 1024,
  gpus: [
    { name: 'A100', memory_mib: 80 * 1024, vendor: 'nvidia' },
    { name: 'A100', memory_mib: 80 * 1024, vendor: 'nvidia' },
  ],
  spot: false,
  disk: { size_mib: 100 * 1024 },
};

/**
 * dstack's `/metrics` families and their labels, read from dstack 0.21.2's
 * src/dstack/_internal/server/services/prometheus/custom_metrics.py (`_INSTANCE_*`, `_RUN_*`,
 * `_JOB_*` and the labels `get_instance_metrics`, `get_run_metrics` and `get_job_metrics` set).
 * Dashboards built for dstack query these names: each must be served under exactly this name.
 */
const INSTANCE_LABELS = [
  'dstack_project_name',
  'dstack_fleet_name',
  'dstack_fleet_id',
  'dstack_instance_name',
  'dstack_instance_id',
  'dstack_instance_type',
  'dstack_backend',
  'dstack_gpu',
];
const RUN_LABELS = ['dstack_project_name', 'dstack_user_name'];
const JOB_LABELS = [
  'dstack_project_name',
  'dstack_user_name',
  'dstack_run_name',
  'dstack_run_id',
  'dstack_job_name',
  'dstack_job_id',
  'dstack_job_num',
  'dstack_replica_num',
  'dstack_run_type',
  'dstack_backend',
  'dstack_gpu',
];
const JOB_GPU_LABELS = [...JOB_LABELS, 'dstack_gpu_num'];
const DSTACK_METRICS: Record<string, { type: string; labels: string[] }> = {
  dstack_instance_duration_seconds_total: { type: 'counter', labels: INSTANCE_LABELS },
  dstack_instance_price_dollars_per_hour: { type: 'gauge', labels: INSTANCE_LABELS },
  dstack_instance_gpu_count: { type: 'gauge', labels: INSTANCE_LABELS },
  dstack_run_count_total: { type: 'counter', labels: RUN_LABELS },
  dstack_run_count_terminated_total: { type: 'counter', labels: RUN_LABELS },
  dstack_run_count_failed_total: { type: 'counter', labels: RUN_LABELS },
  dstack_run_count_done_total: { type: 'counter', labels: RUN_LABELS },
  dstack_job_duration_seconds_total: { type: 'counter', labels: JOB_LABELS },
  dstack_job_price_dollars_per_hour: { type: 'gauge', labels: JOB_LABELS },
  dstack_job_gpu_count: { type: 'gauge', labels: JOB_LABELS },
  dstack_job_cpu_count: { type: 'gauge', labels: JOB_LABELS },
  dstack_job_cpu_time_seconds_total: { type: 'counter', labels: JOB_LABELS },
  dstack_job_memory_total_bytes: { type: 'gauge', labels: JOB_LABELS },
  dstack_job_memory_usage_bytes: { type: 'gauge', labels: JOB_LABELS },
  dstack_job_memory_working_set_bytes: { type: 'gauge', labels: JOB_LABELS },
  dstack_job_gpu_usage_ratio: { type: 'gauge', labels: JOB_GPU_LABELS },
  dstack_job_gpu_memory_total_bytes: { type: 'gauge', labels: JOB_GPU_LABELS },
  dstack_job_gpu_memory_usage_bytes: { type: 'gauge', labels: JOB_GPU_LABELS },
};
/**
 * And the run metrics dstack's process keeps (dstack 0.21.2's
 * src/dstack/_internal/server/services/prometheus/client_metrics.py), as prometheus_client
 * exposes them: the histogram with its `le` buckets, the counter, and each one's `_created`.
 */
const CLIENT_LABELS = ['project_name', 'run_type'];
const DSTACK_CLIENT_METRICS: Record<string, { type: string; labels: string[] }> = {
  dstack_submit_to_provision_duration_seconds: { type: 'histogram', labels: [...CLIENT_LABELS, 'le'] },
  dstack_submit_to_provision_duration_seconds_created: { type: 'gauge', labels: CLIENT_LABELS },
  dstack_pending_runs_total: { type: 'counter', labels: CLIENT_LABELS },
  dstack_pending_runs_created: { type: 'gauge', labels: CLIENT_LABELS },
};
/** Series of this server's own, not dstack's: named so that none takes a name dstack uses. */
const OWN_METRICS: Record<string, { type: string; labels: string[] }> = {
  dstack_server_info: { type: 'gauge', labels: ['dstack_version'] },
};

/**
 * The lines `promtool check metrics` prints for dstack's own names: three of dstack's gauges end
 * in `_count`, which Prometheus' lint reserves for histograms and summaries. Prometheus scrapes
 * and stores them all the same; anything else promtool says is a problem of ours.
 */
const DSTACK_NAME_LINT = new Set(
  ['dstack_instance_gpu_count', 'dstack_job_gpu_count', 'dstack_job_cpu_count'].map(
    (name) => `${name} non-histogram and non-summary metrics should not have "_count" suffix`,
  ),
);

describe("dstack's series", () => {
  it('needs two samples; CPU is the rate between a sample and the one before it, in percent of one CPU', () => {
    expect(jobMetricsOf([point(0)], null)).toEqual({ metrics: [] });
    // Latest first: 1.5 CPU-seconds in the last second, 0.5 in the one before.
    const metrics = jobMetricsOf(
      [
        point(2, { cpu_usage_micro: 2_000_000, memory_working_set_bytes: 300 * MIB }),
        point(1, { cpu_usage_micro: 500_000 }),
        point(0),
      ],
      null,
    );
    expect(metrics.metrics.map((metric) => [metric.name, metric.values])).toEqual([
      ['cpu_usage_percent', [150, 50]],
      ['memory_usage_bytes', [100 * MIB, 100 * MIB]],
      ['memory_working_set_bytes', [300 * MIB, 80 * MIB]],
      ['gpus_detected_num', [0, 0]],
    ]);
    expect(metrics.metrics[0]!.timestamps).toEqual([
      new Date(1_800_000_002_000).toISOString(),
      new Date(1_800_000_001_000).toISOString(),
    ]);
  });

  it('gives per-GPU series and totals from the job resources', () => {
    const gpus = (memory: number[], util: number[]) => ({
      gpus_memory_usage_bytes: JSON.stringify(memory),
      gpus_util_percent: JSON.stringify(util),
    });
    const metrics = jobMetricsOf(
      [point(1, gpus([10 * MIB, 20 * MIB], [90, 5])), point(0, gpus([0, 0], [0, 0]))],
      TWO_GPUS,
    );
    const byName = Object.fromEntries(metrics.metrics.map((metric) => [metric.name, metric.values]));
    expect(byName).toMatchObject({
      cpus_detected_num: [8],
      memory_total_bytes: [32 * 1024 * MIB],
      gpus_detected_num: [2],
      gpu_memory_total_bytes: [80 * 1024 * MIB],
      gpu_memory_usage_bytes_gpu0: [10 * MIB],
      gpu_memory_usage_bytes_gpu1: [20 * MIB],
      gpu_util_percent_gpu0: [90],
      gpu_util_percent_gpu1: [5],
    });
  });

  it('leaves GPUs out, never zero, when a sample could not read them or their number changed', () => {
    const unreadable = jobMetricsOf(
      [point(2), point(1, { gpus_memory_usage_bytes: null, gpus_util_percent: null }), point(0)],
      TWO_GPUS,
    );
    expect(unreadable.metrics.map((metric) => metric.name)).toEqual([
      'cpu_usage_percent',
      'memory_usage_bytes',
      'memory_working_set_bytes',
      'cpus_detected_num',
      'memory_total_bytes',
    ]);
    const changed = jobMetricsOf(
      [point(2, { gpus_memory_usage_bytes: '[1]', gpus_util_percent: '[1]' }), point(1), point(0)],
      null,
    );
    expect(changed.metrics.some((metric) => metric.name.startsWith('gpu'))).toBe(false);
  });
});

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`samples in the database [${dialect}]`, () => {
    let harness: PipelineHarness;
    let run: RunsTable;
    let job: JobsTable;

    beforeAll(async () => {
      harness = await createPipelineHarness({ dialect });
      run = await harness.applyTask('sampled', { commands: ['sleep 120'] });
      await harness.stepUntil(async () => (await harness.jobs(run.id))[0]?.status === 'running');
      job = (await harness.jobs(run.id))[0]!;
    });

    afterAll(async () => {
      await harness?.close();
    });

    it("the job-running pass samples the job's runner once per interval", async () => {
      // The pass that made the job running may have sampled already: start a fresh interval.
      harness.advance(10_000);
      const before = (await selectJobMetricsPoints(harness.app, job.id, {})).length;
      await harness.step('jobs-running');
      const sampled = await selectJobMetricsPoints(harness.app, job.id, {});
      expect(sampled).toHaveLength(before + 1);
      expect(sampled[0]).toMatchObject({ job_id: job.id, gpus_memory_usage_bytes: expect.any(String) });
      expect(sampled[0]!.cpu_usage_micro).toBeGreaterThanOrEqual(0);
      // Within the interval: no new sample.
      harness.advance(1_000);
      await harness.step('jobs-running');
      expect(await selectJobMetricsPoints(harness.app, job.id, {})).toHaveLength(before + 1);
    });

    it("keeps a running job's samples for an hour", async () => {
      const nowMicro = harness.now() * 1000;
      const sample = (ageSeconds: number) => ({
        timestamp_micro: nowMicro - ageSeconds * SECOND_MICRO,
        cpu_usage_micro: 1,
        memory_usage_bytes: 1,
        memory_working_set_bytes: 1,
        gpus: [],
      });
      await storeJobMetricsPoint(harness.app, job.id, sample(3 * 3600));
      await storeJobMetricsPoint(harness.app, job.id, sample(30 * 60));
      await storeJobMetricsPoint(harness.app, 'a-job-long-gone', sample(8 * 24 * 3600));
      expect(await deleteExpiredJobMetrics(harness.app, harness.now())).toBe(2);
      const kept = await selectJobMetricsPoints(harness.app, job.id, {
        beforeMicro: nowMicro - 60 * SECOND_MICRO,
      });
      expect(kept.map((row) => row.timestamp_micro)).toEqual([nowMicro - 30 * 60 * SECOND_MICRO]);
    });

    it('`/metrics` reports the job with its latest sample, and promtool accepts it', async () => {
      await storeJobMetricsPoint(harness.app, job.id, {
        timestamp_micro: harness.now() * 1000 + 1,
        cpu_usage_micro: 2_500_000,
        memory_usage_bytes: 64 * MIB,
        memory_working_set_bytes: 48 * MIB,
        gpus: [],
      });
      const text = renderPrometheusText(await collectPrometheusMetrics(harness.app, harness.now()));
      const jobLabels = `dstack_run_name="sampled",dstack_run_id="${run.id}",dstack_job_name="${job.job_name}"`;
      expect(text).toContain(
        `dstack_job_cpu_time_seconds_total{dstack_project_name="main",dstack_user_name="admin",${jobLabels}`,
      );
      expect(text).toMatch(/^dstack_job_cpu_time_seconds_total\{[^}]*\} 2\.5$/m);
      expect(text).toMatch(/^dstack_job_memory_working_set_bytes\{[^}]*\} 50331648$/m);
      expect(text).toMatch(
        /^dstack_run_count_total\{dstack_project_name="main",dstack_user_name="admin"\} 1$/m,
      );
      expect(text).toMatch(/^# TYPE dstack_instance_price_dollars_per_hour gauge$/m);
      const promtool = await promisify(execFile)('promtool', ['--version']).then(
        () => true,
        () => false,
      );
      if (!promtool) {
        expect(process.env.CI).toBeFalsy();
        return;
      }
      const checked = await new Promise<string>((resolve) => {
        const child = execFile('promtool', ['check', 'metrics'], (_error, stdout, stderr) =>
          resolve(`${stdout}${stderr}`),
        );
        child.stdin?.end(text);
      });
      const problems = checked
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => line !== '' && !DSTACK_NAME_LINT.has(line));
      expect(problems).toEqual([]);
    });

    it("serves dstack's metric names and labels, and its own series under names dstack does not use", async () => {
      // A GPU on the job, and a sample reading it, so that every family of dstack's has a sample.
      const raw = await harness.app.db
        .selectFrom('jobs')
        .select('job_provisioning_data')
        .where('id', '=', job.id)
        .executeTakeFirstOrThrow();
      const provisioning = JSON.parse(raw.job_provisioning_data!);
      provisioning.instance_type.resources.gpus = [{ name: 'A100', memory_mib: 80 * 1024, vendor: 'nvidia' }];
      await harness.app.db
        .updateTable('jobs')
        .set({ job_provisioning_data: JSON.stringify(provisioning), job_runtime_data: null })
        .where('id', '=', job.id)
        .execute();
      await storeJobMetricsPoint(harness.app, job.id, {
        timestamp_micro: harness.now() * 1000 + 2,
        cpu_usage_micro: 1,
        memory_usage_bytes: 1,
        memory_working_set_bytes: 1,
        gpus: [{ gpu_memory_usage_bytes: MIB, gpu_util_percent: 50 }],
      });
      // A run that fails and is retried goes pending: dstack counts it.
      const retried = await harness.applyTask('retried', {
        commands: ['exit 3'],
        retry: { on_events: ['error'], duration: 3600 },
      });
      const runStatus = async () =>
        (
          await harness.app.db
            .selectFrom('runs')
            .select('status')
            .where('id', '=', retried.id)
            .executeTakeFirstOrThrow()
        ).status;
      await harness.stepUntil(async () => (await runStatus()) === 'pending');
      const served = Object.fromEntries(
        (await collectPrometheusMetrics(harness.app, harness.now()))
          .filter((family) => family.samples.length > 0)
          .map((family) => [
            family.name,
            {
              type: family.type,
              labels: [...new Set(family.samples.flatMap((sample) => Object.keys(sample.labels)))],
            },
          ]),
      );
      expect(served).toEqual({ ...OWN_METRICS, ...DSTACK_METRICS, ...DSTACK_CLIENT_METRICS });
      for (const own of Object.keys(OWN_METRICS)) {
        expect({ ...DSTACK_METRICS, ...DSTACK_CLIENT_METRICS }).not.toHaveProperty(own);
      }
    });
  });
}
