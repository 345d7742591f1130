/** The `job_metrics_points` table: samples in, a job's latest samples out. */
import type { RunnerMetricsResponse } from '@dstack/core/agent-protocol';
import type { AppContext } from '../context.js';
import type { JobMetricsPointsTable } from '../db/schema.js';

export type JobMetricsPoint = Omit<JobMetricsPointsTable, 'id'>;

export async function storeJobMetricsPoint(
  app: AppContext,
  jobId: string,
  sample: RunnerMetricsResponse,
): Promise<void> {
  // GPUs that could not be read are stored as unknown (null), not as an empty list: no GPU
  // series is then drawn for the window, rather than a GPU count of zero.
  const gpusUnknown = sample.gpus_error !== undefined && sample.gpus_error !== null;
  await app.db
    .insertInto('job_metrics_points')
    .values({
      job_id: jobId,
      timestamp_micro: sample.timestamp_micro,
      cpu_usage_micro: sample.cpu_usage_micro,
      memory_usage_bytes: sample.memory_usage_bytes,
      memory_working_set_bytes: sample.memory_working_set_bytes,
      gpus_memory_usage_bytes: gpusUnknown
        ? null
        : JSON.stringify(sample.gpus.map((gpu) => gpu.gpu_memory_usage_bytes)),
      gpus_util_percent: gpusUnknown ? null : JSON.stringify(sample.gpus.map((gpu) => gpu.gpu_util_percent)),
    })
    .execute();
}

export interface PointsWindow {
  /** Points at or after this time, µs. */
  afterMicro?: number | null;
  /** Points before this time, µs. */
  beforeMicro?: number | null;
  limit?: number | null;
}

/** A job's points, latest first. */
export async function selectJobMetricsPoints(
  app: AppContext,
  jobId: string,
  window: PointsWindow,
): Promise<JobMetricsPoint[]> {
  let query = app.db
    .selectFrom('job_metrics_points')
    .select([
      'job_id',
      'timestamp_micro',
      'cpu_usage_micro',
      'memory_usage_bytes',
      'memory_working_set_bytes',
      'gpus_memory_usage_bytes',
      'gpus_util_percent',
    ])
    .where('job_id', '=', jobId)
    .orderBy('timestamp_micro', 'desc');
  if (window.afterMicro != null) query = query.where('timestamp_micro', '>=', window.afterMicro);
  if (window.beforeMicro != null) query = query.where('timestamp_micro', '<', window.beforeMicro);
  if (window.limit != null) query = query.limit(window.limit);
  return query.execute();
}

/** The latest point of each job (for `/metrics`), by job id. */
export async function latestJobMetricsPoints(
  app: AppContext,
  jobIds: readonly string[],
): Promise<Map<string, JobMetricsPoint>> {
  const latest = new Map<string, JobMetricsPoint>();
  for (const jobId of jobIds) {
    const [point] = await selectJobMetricsPoints(app, jobId, { limit: 1 });
    if (point) latest.set(jobId, point);
  }
  return latest;
}
