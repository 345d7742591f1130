/**
 * dstack's `metrics/job/{run_name}`: a job's samples turned into named series, latest first.
 * CPU is a rate, so each value comes from a sample and the one before it: N samples give N-1
 * values, and one more sample than `limit` is read.
 */
import type { JobMetrics, JobMetricsRequest, Metric, Resources } from '@dstack/core';
import { ResourceNotFoundError } from '@dstack/core';
import type { AppContext } from '../context.js';
import { jobProvisioningDataOf, jobRuntimeDataOf } from '../db/json-columns.js';
import type { JobsTable, ProjectsTable } from '../db/schema.js';
import { type JobMetricsPoint, selectJobMetricsPoints } from './job-metrics-points.js';

const BYTES_PER_MIB = 1024 * 1024;

/** The resources the job was given: its share of the offer, else the instance's type (as dstack). */
export function jobResourcesOf(job: Pick<JobsTable, 'id' | 'job_runtime_data' | 'job_provisioning_data'>) {
  const runtime = jobRuntimeDataOf(job);
  if (runtime?.offer) return runtime.offer.instance.resources;
  return jobProvisioningDataOf(job)?.instance_type.resources ?? null;
}

function parseGpuList(json: string | null): number[] | null {
  if (json === null) return null;
  const value: unknown = JSON.parse(json);
  return Array.isArray(value) && value.every((item) => typeof item === 'number') ? value : null;
}

function cpuUsagePercent(point: JobMetricsPoint, previous: JobMetricsPoint): number {
  const window = point.timestamp_micro - previous.timestamp_micro;
  if (window <= 0) return 0;
  return Math.round(((point.cpu_usage_micro - previous.cpu_usage_micro) / window) * 100);
}

/** The series of `points` (latest first), as dstack computes them. */
export function jobMetricsOf(points: readonly JobMetricsPoint[], resources: Resources | null): JobMetrics {
  if (points.length < 2) return { metrics: [] };
  const pairs = points.slice(0, -1).map((point, index) => [point, points[index + 1]!] as const);
  const timestamps = pairs.map(([point]) => new Date(point.timestamp_micro / 1000).toISOString());
  const series = (name: string, values: number[]): Metric => ({ name, timestamps, values });
  const constant = (name: string, value: number): Metric =>
    series(
      name,
      timestamps.map(() => value),
    );

  const metrics: Metric[] = [
    series(
      'cpu_usage_percent',
      pairs.map(([point, previous]) => cpuUsagePercent(point, previous)),
    ),
    series(
      'memory_usage_bytes',
      pairs.map(([point]) => point.memory_usage_bytes),
    ),
    series(
      'memory_working_set_bytes',
      pairs.map(([point]) => point.memory_working_set_bytes),
    ),
  ];
  if (resources) {
    metrics.push(constant('cpus_detected_num', resources.cpus));
    metrics.push(constant('memory_total_bytes', resources.memory_mib * BYTES_PER_MIB));
  }

  // GPUs are known by their index only: when their number changes within the window, or they
  // could not be read at some sample, no GPU series is given rather than a misleading one.
  const memoryLists = pairs.map(([point]) => parseGpuList(point.gpus_memory_usage_bytes));
  const utilizationLists = pairs.map(([point]) => parseGpuList(point.gpus_util_percent));
  const gpuCount = memoryLists[0]?.length;
  const consistent =
    gpuCount !== undefined &&
    memoryLists.every((list) => list?.length === gpuCount) &&
    utilizationLists.every((list) => list?.length === gpuCount);
  if (consistent) {
    metrics.push(constant('gpus_detected_num', gpuCount));
    const gpuMemoryMib = resources?.gpus[0]?.memory_mib;
    if (gpuMemoryMib) metrics.push(constant('gpu_memory_total_bytes', gpuMemoryMib * BYTES_PER_MIB));
    for (let gpu = 0; gpu < gpuCount; gpu++) {
      metrics.push(
        series(
          `gpu_memory_usage_bytes_gpu${gpu}`,
          memoryLists.map((list) => list![gpu]!),
        ),
      );
    }
    for (let gpu = 0; gpu < gpuCount; gpu++) {
      metrics.push(
        series(
          `gpu_util_percent_gpu${gpu}`,
          utilizationLists.map((list) => list![gpu]!),
        ),
      );
    }
  }
  return { metrics };
}

/**
 * The job `replica_num`/`job_num` of the run (its latest submission): the newest live run of the
 * name, or the run `run_id` names (deleted ones too, as dstack).
 */
async function findJob(
  app: AppContext,
  project: ProjectsTable,
  runName: string,
  request: JobMetricsRequest,
): Promise<JobsTable | null> {
  let runs = app.db
    .selectFrom('runs')
    .select('id')
    .where('project_id', '=', project.id)
    .where('run_name', '=', runName);
  runs = request.run_id ? runs.where('id', '=', request.run_id) : runs.where('deleted', '=', 0);
  const run = await runs.orderBy('submitted_at', 'desc').executeTakeFirst();
  if (!run) return null;
  const job = await app.db
    .selectFrom('jobs')
    .selectAll()
    .where('run_id', '=', run.id)
    .where('replica_num', '=', request.replica_num)
    .where('job_num', '=', request.job_num)
    .orderBy('submission_num', 'desc')
    .executeTakeFirst();
  return job ?? null;
}

function toMicro(iso: string | null | undefined): number | null {
  return iso ? Date.parse(iso) * 1000 : null;
}

export async function getJobMetrics(
  app: AppContext,
  project: ProjectsTable,
  runName: string,
  request: JobMetricsRequest,
): Promise<JobMetrics> {
  const job = await findJob(app, project, runName, request);
  if (!job) throw new ResourceNotFoundError('Found no job with given parameters');
  const points = await selectJobMetricsPoints(app, job.id, {
    afterMicro: toMicro(request.after),
    beforeMicro: toMicro(request.before),
    // One more than asked: the earliest value's CPU rate needs the sample before it.
    limit: request.limit + 1,
  });
  return jobMetricsOf(points, jobResourcesOf(job));
}
