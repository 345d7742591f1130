/**
 * `dstack metrics RUN [-w]`: each job's latest CPU, memory and GPU figures, as dstack's table
 * (NAME STATUS CPU MEMORY GPU). CPU is the share of the job's CPUs in use; memory the working
 * set (what the job holds but file cache) of the job's memory.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isRunFinished, type JobMetrics, type Resources, type Run } from '@dstack/core';
import type { DstackApiClient } from '../api/client.js';
import type { CliIo } from '../io.js';
import { formatTable, type TableCell } from '../output/table.js';
import { connect, type ProjectOption } from './connect.js';

/** How often `-w` redraws: the server samples every 10 s by default, and sooner when configured. */
const WATCH_INTERVAL_MS = 2000;
/** Clears a terminal and puts the cursor top-left, so `-w` redraws the table in place. */
const CLEAR_SCREEN = '\u001b[H\u001b[2J';

export interface MetricsOptions extends ProjectOption {
  /** Redraw every few seconds until the run finishes (or Ctrl-C). Default false. */
  watch?: boolean;
}

type Job = Run['jobs'][number];

/** What the job was given: its share of the offer, else the instance's type (as dstack). */
function jobResources(job: Job): Resources | null {
  const submission = job.job_submissions.at(-1);
  return (
    submission?.job_runtime_data?.offer?.instance.resources ??
    submission?.job_provisioning_data?.instance_type.resources ??
    null
  );
}

/** The latest value of a series (the server sends the latest first). */
function latest(metrics: JobMetrics, name: string): number | null {
  return metrics.metrics.find((metric) => metric.name === name)?.values[0] ?? null;
}

/** dstack's memory format: MB under a gigabyte, else GB, with up to two decimals. */
export function formatMemory(bytes: number): string {
  const mebibytes = bytes / 1024 / 1024;
  const [value, unit] = mebibytes >= 1024 ? [mebibytes / 1024, 'GB'] : [mebibytes, 'MB'];
  return `${Number(value.toFixed(2))}${unit}`;
}

function cpuCell(metrics: JobMetrics, resources: Resources | null): string {
  const percent = latest(metrics, 'cpu_usage_percent');
  if (percent === null) return '-';
  // The server's figure is of one CPU (200 is two busy CPUs); shown as a share of the job's CPUs.
  const share = resources?.cpus ? percent / resources.cpus : percent;
  return `${Math.round(share)}%`;
}

function memoryCell(metrics: JobMetrics, resources: Resources | null): string {
  const used = latest(metrics, 'memory_working_set_bytes');
  if (used === null) return '-';
  return resources
    ? `${formatMemory(used)}/${formatMemory(resources.memory_mib * 1024 * 1024)}`
    : formatMemory(used);
}

/** One line per GPU: `gpu=0 mem=1.5GB/80GB util=37%`; none when the GPUs could not be read. */
function gpuLines(metrics: JobMetrics, resources: Resources | null): string[] {
  const count = latest(metrics, 'gpus_detected_num') ?? 0;
  const lines: string[] = [];
  for (let gpu = 0; gpu < count; gpu++) {
    const memory = latest(metrics, `gpu_memory_usage_bytes_gpu${gpu}`);
    const utilization = latest(metrics, `gpu_util_percent_gpu${gpu}`);
    if (memory === null) continue;
    const total = resources?.gpus[gpu]?.memory_mib;
    const memoryText = total
      ? `${formatMemory(memory)}/${formatMemory(total * 1024 * 1024)}`
      : formatMemory(memory);
    lines.push(`gpu=${gpu} mem=${memoryText} util=${utilization ?? '-'}%`);
  }
  return lines;
}

/** The table: the run's row, then a row per job (one row in all for a single-job run). */
export function formatMetricsTable(run: Run, jobsMetrics: readonly JobMetrics[]): string {
  const rows: TableCell[][] = [];
  const single = run.jobs.length === 1;
  if (!single) rows.push([run.run_spec.run_name ?? '-', run.status, '', '', '']);
  run.jobs.forEach((job, index) => {
    const metrics = jobsMetrics[index] ?? { metrics: [] };
    const resources = jobResources(job);
    const [firstGpu = '-', ...moreGpus] = gpuLines(metrics, resources);
    rows.push([
      single
        ? (run.run_spec.run_name ?? '-')
        : `  replica=${job.job_spec.replica_num} job=${job.job_spec.job_num}`,
      job.job_submissions.at(-1)?.status ?? '-',
      cpuCell(metrics, resources),
      memoryCell(metrics, resources),
      firstGpu,
    ]);
    for (const line of moreGpus) rows.push(['', '', '', '', line]);
  });
  return formatTable(['NAME', 'STATUS', 'CPU', 'MEMORY', 'GPU'], rows);
}

async function fetchMetrics(client: DstackApiClient, run: Run): Promise<JobMetrics[]> {
  const runName = run.run_spec.run_name ?? '';
  return Promise.all(
    run.jobs.map((job) =>
      client.getJobMetrics(runName, {
        replica_num: job.job_spec.replica_num,
        job_num: job.job_spec.job_num,
        ...(run.id ? { run_id: run.id } : {}),
      }),
    ),
  );
}

export async function metricsCommand(runName: string, options: MetricsOptions, io: CliIo): Promise<number> {
  const client = await connect(options, io);
  let run = await client.getRun(runName);
  for (;;) {
    const table = formatMetricsTable(run, await fetchMetrics(client, run));
    if (!options.watch) {
      io.stdout(table);
      return 0;
    }
    // On a terminal the table is redrawn in place; piped, each refresh is printed after the last.
    io.stdout(io.stdoutIsTerminal ? `${CLEAR_SCREEN}${table}` : `${table}\n`);
    if (isRunFinished(run.status)) return 0;
    await sleep(WATCH_INTERVAL_MS);
    run = await client.getRun(runName);
  }
}
