/**
 * dstack's `utilization_policy`: a running job is terminated when one of its GPUs stayed under
 * `min_gpu_utilization` percent in every sample of the last `time_window` seconds
 * (`terminated_due_to_utilization_policy`). The samples are the job's metrics, which the
 * job-running pass collects from its runner (metrics/job-metrics-sampling.ts); the runner reads
 * them from `nvidia-smi` (or `amd-smi`). As dstack, a window the samples do not cover yet (a job
 * younger than the window, less a minute) decides nothing, and a job without GPU figures (no GPU,
 * or a tool that failed) is never terminated by it: the plan refuses the policy when no offer has
 * a GPU (utilizationPolicyRefusal).
 */
import type { InstanceOfferWithAvailability, JobMetrics, JobSpec, RunConfiguration } from '@dstack/core';
import { ConfigurationError } from '@dstack/core';
import type { AppContext } from '../context.js';
import type { JobsTable } from '../db/schema.js';
import { refuseFields } from '../field-decisions.js';
import { jobMetricsOf, jobResourcesOf } from '../metrics/job-metrics.js';
import { selectJobMetricsPoints } from '../metrics/job-metrics-points.js';

export type UtilizationPolicy = NonNullable<JobSpec['utilization_policy']>;

/** How much later than the window's start its earliest sample may be (dstack: one minute). */
const COVERAGE_SLACK_MS = 60_000;

/**
 * Whether `metrics` (dstack's series, latest first) show a GPU under the policy's threshold
 * for the whole window ending at `nowMs`: null when they cannot tell (no GPU series, or samples
 * that do not reach back to the window's start).
 */
export function lowGpuUtilization(
  policy: UtilizationPolicy,
  metrics: JobMetrics,
  nowMs: number,
): boolean | null {
  const gpus = metrics.metrics.filter((metric) => metric.name.startsWith('gpu_util_percent_gpu'));
  const earliest = gpus[0]?.timestamps.at(-1);
  if (earliest === undefined) return null;
  const windowStart = nowMs - policy.time_window * 1000;
  if (Date.parse(earliest) > windowStart + COVERAGE_SLACK_MS) return null;
  return gpus.some((gpu) => gpu.values.every((value) => value < policy.min_gpu_utilization));
}

/** dstack's termination message. */
export function utilizationPolicyMessage(policy: UtilizationPolicy): string {
  return `The job GPU utilization below ${policy.min_gpu_utilization}% for ${policy.time_window} seconds`;
}

/**
 * The job's verdict now (on the server's clock, `app.clock`): dstack's termination message when
 * the job is to be terminated, else null.
 */
export async function gpuUtilizationVerdict(
  app: AppContext,
  job: Pick<JobsTable, 'id' | 'job_runtime_data' | 'job_provisioning_data'>,
  policy: UtilizationPolicy,
): Promise<string | null> {
  const now = app.clock();
  const points = await selectJobMetricsPoints(app, job.id, {
    afterMicro: (now - policy.time_window * 1000) * 1000,
  });
  const low = lowGpuUtilization(policy, jobMetricsOf(points, jobResourcesOf(job)), now);
  return low ? utilizationPolicyMessage(policy) : null;
}

/**
 * dstack's limit: a window longer than running jobs' samples are kept
 * (`DSTACK_SERVER_METRICS_RUNNING_TTL_SECONDS`) could never be covered. Throws a 400 naming the field.
 */
export function checkUtilizationWindow(configuration: RunConfiguration, app: AppContext): void {
  const window = configuration.utilization_policy?.time_window;
  const kept = app.settings.metrics.runningTtlSeconds;
  if (window !== undefined && window > kept) {
    throw new ConfigurationError(`Maximum utilization_policy.time_window is ${kept}s`, {
      path: ['run_spec', 'configuration', 'utilization_policy', 'time_window'],
    });
  }
}

/**
 * The policy refused when none of the run's offers (fleet instances and backend offers) has a
 * GPU: the job would run where no utilization can be read, and the policy would never act.
 * A plan without any offer is not refused here: it says it has none.
 */
export function utilizationPolicyRefusal(
  configuration: RunConfiguration,
  jobOffers: ReadonlyArray<readonly InstanceOfferWithAvailability[]>,
): { path: string; reason: string } | null {
  if (!configuration.utilization_policy) return null;
  const offers = jobOffers.flat();
  if (offers.length === 0 || offers.some((offer) => offer.instance.resources.gpus.length > 0)) return null;
  return {
    path: 'utilization_policy',
    reason: `none of the ${offers.length} offers has a GPU, so GPU utilization cannot be watched (ask for one: resources.gpu)`,
  };
}

/** Throws the 400 of {@link utilizationPolicyRefusal}, at plan and at apply. */
export function refuseUtilizationPolicyWithoutGpus(
  configuration: RunConfiguration,
  jobOffers: ReadonlyArray<readonly InstanceOfferWithAvailability[]>,
): void {
  const refusal = utilizationPolicyRefusal(configuration, jobOffers);
  refuseFields(refusal ? [refusal] : [], ['run_spec', 'configuration']);
}
