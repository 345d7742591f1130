/**
 * Job metrics on the wire, as dstack's `metrics/job/{run_name}`: each metric is a named series of
 * (timestamp, value) pairs, latest first.
 */
import * as z from 'zod';

/** One series: `cpu_usage_percent`, `memory_usage_bytes`, `gpu_util_percent_gpu0`, … */
export const MetricSchema = z.object({
  name: z.string(),
  /** ISO 8601 times, latest first; `values[i]` was measured at `timestamps[i]`. */
  timestamps: z.array(z.string()),
  values: z.array(z.number()),
});
export type Metric = z.output<typeof MetricSchema>;

export const JobMetricsSchema = z.object({ metrics: z.array(MetricSchema) });
export type JobMetrics = z.output<typeof JobMetricsSchema>;

const isoTime = (field: string) =>
  z.string().refine((value) => !Number.isNaN(Date.parse(value)), {
    error: `${field}: expected an ISO 8601 date-time`,
  });

/**
 * Which job and which samples (dstack's query parameters of `GET metrics/job/{run_name}`; the
 * same fields are accepted as a JSON body by POST). Without `after`, `before` and `limit`, the one
 * latest sample.
 */
export const JobMetricsRequestSchema = z.object({
  /** A run of that name other than the latest one (a deleted run's id). */
  run_id: z.string().nullish(),
  replica_num: z.number().int().nonnegative().default(0),
  job_num: z.number().int().nonnegative().default(0),
  /** At most this many samples, latest first. dstack's default: 1. */
  limit: z.number().int().positive().max(100_000).default(1),
  /** Only samples at or after this time. */
  after: isoTime('after').nullish(),
  /** Only samples before this time. */
  before: isoTime('before').nullish(),
});
export type JobMetricsRequest = z.output<typeof JobMetricsRequestSchema>;

/** The names dstack's query parameters carry as numbers (a query string has only text). */
export const JOB_METRICS_NUMERIC_QUERY_FIELDS = ['replica_num', 'job_num', 'limit'] as const;
