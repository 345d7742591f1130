import type { Job, JobMetrics, Metric } from '@dstack/core';
import { projectPath } from '../api';
import { formatBytes, formatPercent } from '../format';
import { type ChartSeries, LineChart } from '../line-chart';
import { useSession } from '../session';
import { useData } from '../use-data';

/** Samples per chart: at the server's default cadence (10 s), the last quarter of an hour. */
const SAMPLES = 90;
const REFRESH_MS = 5000;

const toSeries = (metric: Metric, label = metric.name): ChartSeries => ({
  label,
  points: metric.timestamps.map((timestamp, index) => ({
    time: Date.parse(timestamp),
    value: metric.values[index] ?? 0,
  })),
});

/** The latest value of a series that holds one figure (the job's CPU count, its memory). */
const latestValue = (metrics: readonly Metric[], name: string): number | undefined =>
  metrics.find((metric) => metric.name === name)?.values[0];

/** `gpu_util_percent_gpu0`, `gpu_util_percent_gpu1`, … as one series per GPU. */
const perGpu = (metrics: readonly Metric[], prefix: string): ChartSeries[] =>
  metrics
    .filter((metric) => metric.name.startsWith(prefix) && metric.values.length > 0)
    .map((metric) => toSeries(metric, `gpu${metric.name.slice(prefix.length)}`));

/** One job's charts: CPU, memory, and per-GPU utilization and memory when the job has GPUs. */
function JobCharts({ metrics }: { metrics: readonly Metric[] }) {
  const named = (name: string) => metrics.find((metric) => metric.name === name && metric.values.length > 0);
  const cpu = named('cpu_usage_percent');
  const memory = named('memory_working_set_bytes');
  const gpuUtilization = perGpu(metrics, 'gpu_util_percent_gpu');
  const gpuMemory = perGpu(metrics, 'gpu_memory_usage_bytes_gpu');
  if (!cpu && !memory && gpuUtilization.length === 0) {
    return <p className="muted">No samples yet: the server samples a running job every few seconds.</p>;
  }
  // cpu_usage_percent is of one CPU (200 is two busy CPUs): the job may reach 100 per CPU.
  const cpus = latestValue(metrics, 'cpus_detected_num') ?? 1;
  return (
    <div className="charts">
      {cpu && (
        <LineChart
          title="CPU"
          testId="metric-cpu"
          series={[toSeries(cpu)]}
          scaleFloor={100}
          limit={cpus * 100}
          format={formatPercent}
        />
      )}
      {memory && (
        <LineChart
          title="Memory"
          testId="metric-memory"
          series={[toSeries(memory)]}
          limit={latestValue(metrics, 'memory_total_bytes')}
          format={formatBytes}
        />
      )}
      {gpuUtilization.length > 0 && (
        <LineChart
          title="GPU utilization"
          testId="metric-gpu-utilization"
          series={gpuUtilization}
          scaleFloor={100}
          limit={100}
          format={formatPercent}
        />
      )}
      {gpuMemory.length > 0 && (
        <LineChart
          title="GPU memory"
          testId="metric-gpu-memory"
          series={gpuMemory}
          limit={latestValue(metrics, 'gpu_memory_total_bytes')}
          format={formatBytes}
        />
      )}
    </div>
  );
}

/**
 * Each job's resource use from `metrics/job/{run}` (as `dstack metrics`), redrawn every few
 * seconds while the run is `live`; a finished run's last samples are loaded once.
 */
export function RunMetrics({
  project,
  runName,
  jobs,
  live,
}: {
  project: string;
  runName: string;
  jobs: readonly Job[];
  live: boolean;
}) {
  const { api } = useSession();
  const jobKeys = jobs.map((job) => `${job.job_spec.replica_num}/${job.job_spec.job_num}`).join(',');
  const loaded = useData(
    () =>
      Promise.all(
        jobs.map((job) =>
          api.post<JobMetrics>(projectPath(project, `metrics/job/${encodeURIComponent(runName)}`), {
            replica_num: job.job_spec.replica_num,
            job_num: job.job_spec.job_num,
            limit: SAMPLES,
          }),
        ),
      ),
    [api, project, runName, jobKeys],
    live ? REFRESH_MS : 0,
  );
  if (loaded.error) return <p className="error">{loaded.error}</p>;
  if (!loaded.data) return <p className="muted">Loading…</p>;
  return (
    <div data-testid="run-metrics">
      {jobs.map((job, index) => (
        <div key={`${job.job_spec.replica_num}/${job.job_spec.job_num}`}>
          {jobs.length > 1 && <h3>{job.job_spec.job_name}</h3>}
          <JobCharts metrics={loaded.data?.[index]?.metrics ?? []} />
        </div>
      ))}
    </div>
  );
}
