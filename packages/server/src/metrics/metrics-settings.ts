/** How jobs' resource use is sampled and kept, and whether Prometheus may scrape the server. */
import {
  type Environment,
  integerVariable,
  secondsVariableAsMs,
  stringVariable,
} from '../environment-variables.js';

/** `DSTACK_SERVER_METRICS_COLLECT_INTERVAL` when unset: seconds between samples of a running job (dstack's 10). */
export const DEFAULT_METRICS_COLLECT_INTERVAL_SECONDS = 10;
/** `DSTACK_SERVER_METRICS_RUNNING_TTL_SECONDS` when unset (dstack's): a running job's samples kept for an hour. */
export const DEFAULT_METRICS_RUNNING_TTL_SECONDS = 3600;
/** `DSTACK_SERVER_METRICS_FINISHED_TTL_SECONDS` when unset (dstack's): a finished job's samples kept for a week. */
export const DEFAULT_METRICS_FINISHED_TTL_SECONDS = 7 * 24 * 3600;

export interface MetricsSettings {
  /**
   * `DSTACK_SERVER_METRICS_COLLECT_INTERVAL`: how often a running job's resource use is sampled
   * from its runner, in milliseconds (the variable is in seconds). Default dstack's 10 s.
   */
  collectIntervalMs: number;
  /** `DSTACK_SERVER_METRICS_RUNNING_TTL_SECONDS` (dstack's): how long a running job's samples are kept. Default 3600. */
  runningTtlSeconds: number;
  /** `DSTACK_SERVER_METRICS_FINISHED_TTL_SECONDS` (dstack's): how long a finished job's samples are kept. Default 7 days. */
  finishedTtlSeconds: number;
  /**
   * `DSTACK_ENABLE_PROMETHEUS_METRICS` (dstack's setting): serve `GET /metrics` in Prometheus'
   * text format. Default false (`/metrics` answers 404).
   */
  prometheusEnabled: boolean;
  /**
   * `DSTACK_PROMETHEUS_AUTH_TOKEN` (dstack's setting): the bearer token `GET /metrics` requires.
   * Null: none, as in dstack (anyone who reaches the server may read it).
   */
  prometheusAuthToken: string | null;
}

export function readMetricsSettings(env: Environment): MetricsSettings {
  const ttl = { min: 1, max: Number.MAX_SAFE_INTEGER };
  return {
    collectIntervalMs: secondsVariableAsMs(
      env,
      'DSTACK_SERVER_METRICS_COLLECT_INTERVAL',
      DEFAULT_METRICS_COLLECT_INTERVAL_SECONDS,
      { min: 1, max: 3600 },
    ),
    runningTtlSeconds: integerVariable(
      env,
      'DSTACK_SERVER_METRICS_RUNNING_TTL_SECONDS',
      DEFAULT_METRICS_RUNNING_TTL_SECONDS,
      ttl,
    ),
    finishedTtlSeconds: integerVariable(
      env,
      'DSTACK_SERVER_METRICS_FINISHED_TTL_SECONDS',
      DEFAULT_METRICS_FINISHED_TTL_SECONDS,
      ttl,
    ),
    // dstack enables it when the variable is set at all.
    prometheusEnabled: env.DSTACK_ENABLE_PROMETHEUS_METRICS !== undefined,
    prometheusAuthToken: stringVariable(env, 'DSTACK_PROMETHEUS_AUTH_TOKEN'),
  };
}
