/**
 * `metrics/job/{run_name}`: dstack's `GET` with query parameters (what dstack's client sends),
 * and the same fields as a JSON body by `POST`, as this API's other routes take them.
 */
import {
  JOB_METRICS_NUMERIC_QUERY_FIELDS,
  JobMetricsRequestSchema,
  JobMetricsSchema,
  strictRequestBody,
} from '@dstack/core';
import { defineRoute, projectContext } from '../http/route.js';
import { getJobMetrics } from './job-metrics.js';

const PATH = '/api/project/{project_name}/metrics/job/{run_name}';
const SUMMARY =
  "A job's resource use, latest sample first: cpu_usage_percent (of one CPU: 200 is two busy CPUs), " +
  'memory_usage_bytes, memory_working_set_bytes, cpus_detected_num, memory_total_bytes, gpus_detected_num, ' +
  'gpu_memory_total_bytes, gpu_memory_usage_bytes_gpu{i}, gpu_util_percent_gpu{i}. ' +
  'Without after, before and limit: the latest sample.';

/** The query string as the request's fields: whole numbers where dstack sends numbers. */
function queryFields(query: URLSearchParams): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [name, value] of query) {
    const numeric = (JOB_METRICS_NUMERIC_QUERY_FIELDS as readonly string[]).includes(name);
    fields[name] = numeric && /^-?\d+$/.test(value) ? Number(value) : value;
  }
  return fields;
}

const strictRequest = strictRequestBody(JobMetricsRequestSchema);

export const metricsRoutes = [
  defineRoute({
    method: 'GET',
    path: PATH,
    summary: `${SUMMARY} Query parameters: run_id, replica_num (0), job_num (0), limit (1), after, before (ISO 8601).`,
    tags: ['metrics'],
    auth: 'project-member',
    response: JobMetricsSchema,
    async handler(ctx) {
      const request = strictRequest.parse(queryFields(ctx.query));
      return getJobMetrics(ctx.app, projectContext(ctx).project, ctx.params.run_name!, request);
    },
  }),
  defineRoute({
    method: 'POST',
    path: PATH,
    summary: `${SUMMARY} The body takes the GET's query parameters as fields.`,
    tags: ['metrics'],
    auth: 'project-member',
    body: JobMetricsRequestSchema,
    response: JobMetricsSchema,
    async handler(ctx) {
      return getJobMetrics(ctx.app, projectContext(ctx).project, ctx.params.run_name!, ctx.body);
    },
  }),
];
