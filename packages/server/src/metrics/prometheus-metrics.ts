/**
 * What `GET /metrics` reports, with dstack's metric and label names (dstack's
 * `services/prometheus/custom_metrics.py`): the server, instances (their price per hour), run
 * counts per project and user, and each active job (its share's price and resources, and its
 * latest resource sample). Dashboards built for dstack query these names, so they are dstack's
 * even where Prometheus' lint objects: `dstack_instance_gpu_count`, `dstack_job_gpu_count` and
 * `dstack_job_cpu_count` end in `_count`, which `promtool check metrics` reserves for histograms.
 * `dstack_server_info` is this server's own; dstack serves no series of that name.
 */
import { getBaseBackend } from '@dstack/core';
import type { AppContext } from '../context.js';
import { instanceOfferOf, jobProvisioningDataOf, jobRuntimeDataOf, runSpecOf } from '../db/json-columns.js';
import { SERVER_VERSION } from '../http/server-routes.js';
import { latestJobMetricsPoints } from './job-metrics-points.js';
import { MetricFamilies, type MetricFamily } from './prometheus-text.js';
import { runClientMetricFamilies } from './run-client-metrics.js';

const BYTES_PER_MIB = 1024 * 1024;

async function serverMetrics(): Promise<MetricFamily[]> {
  const families = new MetricFamilies([['dstack_server_info', 'gauge', 'The dstack server, by version']]);
  families.add('dstack_server_info', { dstack_version: SERVER_VERSION }, 1);
  return families.values();
}

async function instanceMetrics(app: AppContext, now: number): Promise<MetricFamily[]> {
  const rows = await app.db
    .selectFrom('instances')
    .innerJoin('projects', 'projects.id', 'instances.project_id')
    .leftJoin('fleets', 'fleets.id', 'instances.fleet_id')
    .select([
      'instances.id',
      'instances.name',
      'instances.created_at',
      'instances.price',
      'instances.backend',
      'instances.offer',
      'instances.fleet_id',
      'projects.name as project_name',
      'fleets.name as fleet_name',
    ])
    .where('instances.deleted', '=', 0)
    .where('instances.status', 'in', ['provisioning', 'idle', 'busy', 'terminating'])
    .orderBy('projects.name')
    .orderBy('instances.name')
    .execute();
  const families = new MetricFamilies([
    ['dstack_instance_duration_seconds_total', 'counter', 'Total seconds the instance is running'],
    ['dstack_instance_price_dollars_per_hour', 'gauge', 'Instance price, USD/hour'],
    ['dstack_instance_gpu_count', 'gauge', 'Instance GPU count'],
  ]);
  for (const row of rows) {
    const offer = instanceOfferOf(row);
    const gpus = offer?.instance.resources.gpus ?? [];
    const labels = {
      dstack_project_name: row.project_name,
      dstack_fleet_name: row.fleet_name ?? '',
      dstack_fleet_id: row.fleet_id ?? '',
      dstack_instance_name: row.name,
      dstack_instance_id: row.id,
      dstack_instance_type: offer?.instance.name ?? '',
      dstack_backend: row.backend ?? '',
      dstack_gpu: gpus[0]?.name ?? '',
    };
    families.add('dstack_instance_duration_seconds_total', labels, Math.max(0, now - row.created_at) / 1000);
    families.add('dstack_instance_price_dollars_per_hour', labels, row.price ?? 0);
    families.add('dstack_instance_gpu_count', labels, gpus.length);
  }
  return families.values();
}

async function runMetrics(app: AppContext): Promise<MetricFamily[]> {
  const rows = await app.db
    .selectFrom('runs')
    .innerJoin('projects', 'projects.id', 'runs.project_id')
    .innerJoin('users', 'users.id', 'runs.user_id')
    .select(['projects.name as project_name', 'users.name as user_name', 'runs.status'])
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .groupBy(['projects.name', 'users.name', 'runs.status'])
    .orderBy('projects.name')
    .orderBy('users.name')
    .execute();
  const counts = new Map<string, { project: string; user: string; byStatus: Map<string, number> }>();
  for (const row of rows) {
    const key = JSON.stringify([row.project_name, row.user_name]);
    let entry = counts.get(key);
    if (!entry) {
      entry = { project: row.project_name, user: row.user_name, byStatus: new Map() };
      counts.set(key, entry);
    }
    entry.byStatus.set(row.status, Number(row.count));
  }
  const families = new MetricFamilies([
    ['dstack_run_count_total', 'counter', 'Total runs count'],
    ['dstack_run_count_terminated_total', 'counter', 'Terminated runs count'],
    ['dstack_run_count_failed_total', 'counter', 'Failed runs count'],
    ['dstack_run_count_done_total', 'counter', 'Done runs count'],
  ]);
  for (const { project, user, byStatus } of counts.values()) {
    const labels = { dstack_project_name: project, dstack_user_name: user };
    families.add(
      'dstack_run_count_total',
      labels,
      [...byStatus.values()].reduce((a, b) => a + b, 0),
    );
    families.add('dstack_run_count_terminated_total', labels, byStatus.get('terminated') ?? 0);
    families.add('dstack_run_count_failed_total', labels, byStatus.get('failed') ?? 0);
    families.add('dstack_run_count_done_total', labels, byStatus.get('done') ?? 0);
  }
  return families.values();
}

async function jobMetrics(app: AppContext, now: number): Promise<MetricFamily[]> {
  const rows = await app.db
    .selectFrom('jobs')
    .innerJoin('runs', 'runs.id', 'jobs.run_id')
    .innerJoin('projects', 'projects.id', 'jobs.project_id')
    .innerJoin('users', 'users.id', 'runs.user_id')
    .select([
      'jobs.id',
      'jobs.job_name',
      'jobs.job_num',
      'jobs.replica_num',
      'jobs.submitted_at',
      'jobs.job_provisioning_data',
      'jobs.job_runtime_data',
      'runs.id as run_id',
      'runs.run_name',
      'runs.run_spec',
      'projects.name as project_name',
      'users.name as user_name',
    ])
    .where('jobs.status', 'in', ['provisioning', 'pulling', 'running', 'terminating'])
    .orderBy('projects.name')
    .orderBy('jobs.job_name')
    .execute();
  const points = await latestJobMetricsPoints(
    app,
    rows.map((row) => row.id),
  );
  const families = new MetricFamilies([
    ['dstack_job_duration_seconds_total', 'counter', 'Total seconds the job is running'],
    ['dstack_job_price_dollars_per_hour', 'gauge', 'Job instance price, USD/hour'],
    ['dstack_job_gpu_count', 'gauge', 'Job GPU count'],
    ['dstack_job_cpu_count', 'gauge', 'Job CPU count'],
    ['dstack_job_cpu_time_seconds_total', 'counter', 'Total CPU time consumed by the job, seconds'],
    ['dstack_job_memory_total_bytes', 'gauge', 'Total memory allocated for the job, bytes'],
    ['dstack_job_memory_usage_bytes', 'gauge', 'Memory used by the job (including cache), bytes'],
    ['dstack_job_memory_working_set_bytes', 'gauge', 'Memory used by the job (not including cache), bytes'],
    ['dstack_job_gpu_usage_ratio', 'gauge', 'Job GPU usage, percent (as 0.0-1.0)'],
    ['dstack_job_gpu_memory_total_bytes', 'gauge', 'Total GPU memory allocated for the job, bytes'],
    ['dstack_job_gpu_memory_usage_bytes', 'gauge', 'GPU memory used by the job, bytes'],
  ]);
  for (const row of rows) {
    const provisioningData = jobProvisioningDataOf({
      id: row.id,
      job_provisioning_data: row.job_provisioning_data,
    });
    if (!provisioningData) continue;
    const offer = jobRuntimeDataOf({ id: row.id, job_runtime_data: row.job_runtime_data })?.offer;
    const resources = offer?.instance.resources ?? provisioningData.instance_type.resources;
    const price = offer?.price ?? provisioningData.price;
    const labels = {
      dstack_project_name: row.project_name,
      dstack_user_name: row.user_name,
      dstack_run_name: row.run_name,
      dstack_run_id: row.run_id,
      dstack_job_name: row.job_name,
      dstack_job_id: row.id,
      dstack_job_num: String(row.job_num),
      dstack_replica_num: String(row.replica_num),
      dstack_run_type: runSpecOf({ id: row.run_id, run_spec: row.run_spec }).configuration.type,
      dstack_backend: getBaseBackend(provisioningData),
      dstack_gpu: resources.gpus[0]?.name ?? '',
    };
    families.add('dstack_job_duration_seconds_total', labels, Math.max(0, now - row.submitted_at) / 1000);
    families.add('dstack_job_price_dollars_per_hour', labels, price);
    families.add('dstack_job_gpu_count', labels, resources.gpus.length);
    families.add('dstack_job_cpu_count', labels, resources.cpus);
    families.add('dstack_job_memory_total_bytes', labels, resources.memory_mib * BYTES_PER_MIB);
    const point = points.get(row.id);
    if (!point) continue;
    families.add('dstack_job_cpu_time_seconds_total', labels, point.cpu_usage_micro / 1_000_000);
    families.add('dstack_job_memory_usage_bytes', labels, point.memory_usage_bytes);
    families.add('dstack_job_memory_working_set_bytes', labels, point.memory_working_set_bytes);
    const gpuMemoryTotal = (resources.gpus[0]?.memory_mib ?? 0) * BYTES_PER_MIB;
    const utilization =
      point.gpus_util_percent === null ? [] : (JSON.parse(point.gpus_util_percent) as number[]);
    const memory =
      point.gpus_memory_usage_bytes === null ? [] : (JSON.parse(point.gpus_memory_usage_bytes) as number[]);
    if (resources.gpus.length === 0) continue;
    for (let gpu = 0; gpu < Math.min(utilization.length, memory.length); gpu++) {
      const gpuLabels = { ...labels, dstack_gpu_num: String(gpu) };
      families.add('dstack_job_gpu_usage_ratio', gpuLabels, utilization[gpu]! / 100);
      families.add('dstack_job_gpu_memory_total_bytes', gpuLabels, gpuMemoryTotal);
      families.add('dstack_job_gpu_memory_usage_bytes', gpuLabels, memory[gpu]!);
    }
  }
  return families.values();
}

/** Every family `/metrics` answers, as dstack orders them (instances, runs, jobs, then its process's), after the server's. */
export async function collectPrometheusMetrics(app: AppContext, now = Date.now()): Promise<MetricFamily[]> {
  return [
    ...(await serverMetrics()),
    ...(await instanceMetrics(app, now)),
    ...(await runMetrics(app)),
    ...(await jobMetrics(app, now)),
    ...runClientMetricFamilies(),
  ];
}
