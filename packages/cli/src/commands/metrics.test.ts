import type { JobMetrics } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { makeRun } from '../__fixtures__/api-objects.js';
import { CLI_TEST_TIMEOUT_MS } from '../__fixtures__/cli-harness.js';
import { fakeServerCli } from '../__fixtures__/fake-server-cli.js';
import { formatMemory, formatMetricsTable } from './metrics.js';

const MIB = 1024 * 1024;
const at = ['2026-11-28T06:00:02.000Z', '2026-11-28T06:00:01.000Z'];
const metric = (name: string, values: number[]) => ({ name, timestamps: at, values });

/** Two GPUs busy; latest sample first, as the server sends them. */
const GPU_JOB: JobMetrics = {
  metrics: [
    metric('cpu_usage_percent', [200, 10]),
    metric('memory_usage_bytes', [3 * 1024 * MIB, MIB]),
    metric('memory_working_set_bytes', [1536 * MIB, MIB]),
    metric('gpus_detected_num', [2, 2]),
    metric('gpu_memory_usage_bytes_gpu0', [40 * 1024 * MIB, 0]),
    metric('gpu_memory_usage_bytes_gpu1', [512 * MIB, 0]),
    metric('gpu_util_percent_gpu0', [97, 0]),
    metric('gpu_util_percent_gpu1', [3, 0]),
  ],
};

describe('dstack metrics', () => {
  const cli = fakeServerCli();

  it('formats memory as dstack: MB under a gigabyte, else GB, up to two decimals', () => {
    expect(formatMemory(512 * MIB)).toBe('512MB');
    expect(formatMemory(1536 * MIB)).toBe('1.5GB');
    expect(formatMemory(16 * 1024 * MIB)).toBe('16GB');
    expect(formatMemory(1234567)).toBe('1.18MB');
  });

  it("prints the latest sample: CPU of the job's CPUs, its working set of its memory, a line per GPU", () => {
    const run = makeRun({
      name: 'train',
      status: 'running',
      provisioned: { backend: 'aws', region: 'us-east-1', price: 1.5, gpus: 2 },
    });
    expect(formatMetricsTable(run, [GPU_JOB]).split('\n')).toEqual([
      expect.stringMatching(/^NAME\s+STATUS\s+CPU\s+MEMORY\s+GPU$/),
      // 200% of one CPU is half of the instance's 4.
      expect.stringMatching(/^train\s+running\s+50%\s+1\.5GB\/16GB\s+gpu=0 mem=40GB\/80GB util=97%$/),
      expect.stringMatching(/^\s+gpu=1 mem=512MB\/80GB util=3%$/),
      '',
    ]);
  });

  it('shows dashes before there are two samples, and no GPU when none were read', () => {
    const run = makeRun({ name: 'young', status: 'provisioning' });
    const table = formatMetricsTable(run, [{ metrics: [] }]);
    expect(table).toMatch(/^young\s+provisioning\s+-\s+-\s+-$/m);
  });

  it('asks the server for each job and prints the table', { timeout: CLI_TEST_TIMEOUT_MS }, async () => {
    const run = makeRun({
      name: 'train',
      status: 'running',
      provisioned: { backend: 'aws', region: 'us-east-1', price: 1.5, gpus: 2 },
    });
    const fake = await cli.startServer({
      'runs/get': () => run,
      'metrics/job/train': () => GPU_JOB,
    });
    const result = await cli.harness.run(['metrics', 'train']);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/^train\s+running\s+50%\s+1\.5GB\/16GB\s+gpu=0 mem=40GB\/80GB util=97%$/m);
    expect(fake.requestsTo('metrics/job/train')[0]?.body).toEqual({
      replica_num: 0,
      job_num: 0,
      run_id: run.id,
    });
  });
});
