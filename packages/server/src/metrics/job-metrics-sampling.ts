/**
 * Samples a running job's resource use from its runner (`GET /api/metrics`) into
 * `job_metrics_points`, at most once per collect interval (dstack's 10 s). The job-running
 * pipeline calls it after each pull, so the runner is reached the way the pull reached it.
 */
import type { JobProvisioningData } from '@dstack/core';
import { runnerClientFor } from '../agents/agent-clients.js';
import type { AppContext } from '../context.js';
import type { JobsTable, ProjectsTable } from '../db/schema.js';
import { storeJobMetricsPoint } from './job-metrics-points.js';

export interface SampledJob {
  app: AppContext;
  job: JobsTable;
  project: ProjectsTable;
  provisioningData: JobProvisioningData;
  runnerPort: number;
  signal?: AbortSignal;
}

/**
 * Takes a sample when the job's last one is older than the interval; answers whether it stored
 * one. A runner that cannot answer (an older one without the route, a job just ending) leaves a
 * gap, never a failure of the job's pass.
 */
export async function sampleJobMetricsWhenDue(context: SampledJob): Promise<boolean> {
  const { app, job } = context;
  const sampled = app.caches.metrics.lastSampledAt;
  const now = Date.now();
  const interval = app.settings.metrics.collectIntervalMs;
  if (now - (sampled.get(job.id) ?? 0) < interval) return false;
  sampled.set(job.id, now);
  forgetEndedJobs(sampled, now, interval);
  try {
    const runner = await runnerClientFor(
      app,
      context.project,
      context.provisioningData,
      context.runnerPort,
      job,
      context.signal,
    );
    await storeJobMetricsPoint(app, job.id, await runner.metrics());
    return true;
  } catch {
    // A gap in the series; the next pass tries again after the interval.
    return false;
  }
}

/** Jobs not sampled for many intervals have ended (or moved to another replica): their entries go. */
function forgetEndedJobs(sampled: Map<string, number>, now: number, interval: number): void {
  if (sampled.size < 1000) return;
  for (const [jobId, at] of sampled) if (now - at > interval * 10) sampled.delete(jobId);
}
