/**
 * dstack's two run metrics kept in the server process (`services/prometheus/client_metrics.py`,
 * prometheus_client's registry there, appended to `/metrics` after the database's series): the
 * time from a run's submission to its first provisioning, as a histogram, and how often runs went
 * pending (a retry), by project and run type. Like dstack's, they count from the process's start.
 * prometheus_client also writes each family's creation time as `…_created`; so does this.
 */
import type { MetricFamily } from './prometheus-text.js';

/** dstack's buckets, in seconds ("optimized for percentile calculation"). */
const SUBMIT_TO_PROVISION_BUCKETS = [
  15,
  30,
  45,
  60,
  90,
  120,
  180,
  240,
  300,
  360,
  420,
  480,
  540,
  600,
  900,
  1200,
  1800,
  Number.POSITIVE_INFINITY,
];

interface Series {
  labels: { project_name: string; run_type: string };
  /** Seconds since the epoch, as prometheus_client's `_created`. */
  created: number;
}
interface HistogramSeries extends Series {
  bucketCounts: number[];
  sum: number;
  count: number;
}
interface CounterSeries extends Series {
  value: number;
}

const submitToProvision = new Map<string, HistogramSeries>();
const pendingRuns = new Map<string, CounterSeries>();

function keyOf(projectName: string, runType: string): string {
  return JSON.stringify([projectName, runType]);
}

/** A run went from submitted to provisioning `seconds` after its submission. */
export function observeSubmitToProvision(seconds: number, projectName: string, runType: string): void {
  const key = keyOf(projectName, runType);
  let series = submitToProvision.get(key);
  if (!series) {
    series = {
      labels: { project_name: projectName, run_type: runType },
      created: Date.now() / 1000,
      bucketCounts: SUBMIT_TO_PROVISION_BUCKETS.map(() => 0),
      sum: 0,
      count: 0,
    };
    submitToProvision.set(key, series);
  }
  SUBMIT_TO_PROVISION_BUCKETS.forEach((bound, index) => {
    if (seconds <= bound) series.bucketCounts[index]! += 1;
  });
  series.sum += seconds;
  series.count += 1;
}

/** A run went pending (it will be submitted again). */
export function countPendingRun(projectName: string, runType: string): void {
  const key = keyOf(projectName, runType);
  const series = pendingRuns.get(key) ?? {
    labels: { project_name: projectName, run_type: runType },
    created: Date.now() / 1000,
    value: 0,
  };
  series.value += 1;
  pendingRuns.set(key, series);
}

function formatBound(bound: number): string {
  // prometheus_client writes bounds as Python floats: 15.0, +Inf.
  return bound === Number.POSITIVE_INFINITY ? '+Inf' : bound.toFixed(1);
}

/** The families as prometheus_client exposes them; a family without samples is left out when rendered. */
export function runClientMetricFamilies(): MetricFamily[] {
  const histogram: MetricFamily = {
    name: 'dstack_submit_to_provision_duration_seconds',
    type: 'histogram',
    help: 'Time from when a run has been submitted and first job provisioning',
    samples: [],
  };
  const histogramCreated: MetricFamily = {
    name: 'dstack_submit_to_provision_duration_seconds_created',
    type: 'gauge',
    help: 'Time from when a run has been submitted and first job provisioning',
    samples: [],
  };
  for (const series of submitToProvision.values()) {
    SUBMIT_TO_PROVISION_BUCKETS.forEach((bound, index) => {
      histogram.samples.push({
        name: 'dstack_submit_to_provision_duration_seconds_bucket',
        labels: { ...series.labels, le: formatBound(bound) },
        value: series.bucketCounts[index]!,
      });
    });
    histogram.samples.push(
      {
        name: 'dstack_submit_to_provision_duration_seconds_count',
        labels: series.labels,
        value: series.count,
      },
      { name: 'dstack_submit_to_provision_duration_seconds_sum', labels: series.labels, value: series.sum },
    );
    histogramCreated.samples.push({ labels: series.labels, value: series.created });
  }
  const counter: MetricFamily = {
    name: 'dstack_pending_runs_total',
    type: 'counter',
    help: 'Number of pending runs',
    samples: [...pendingRuns.values()].map((series) => ({ labels: series.labels, value: series.value })),
  };
  const counterCreated: MetricFamily = {
    name: 'dstack_pending_runs_created',
    type: 'gauge',
    help: 'Number of pending runs',
    samples: [...pendingRuns.values()].map((series) => ({ labels: series.labels, value: series.created })),
  };
  return [histogram, histogramCreated, counter, counterCreated];
}
