import type { InstanceOfferWithAvailability, JobMetrics, RunConfiguration } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { lowGpuUtilization, utilizationPolicyMessage, utilizationPolicyRefusal } from './gpu-utilization.js';

const POLICY = { min_gpu_utilization: 10, time_window: 300 };
const NOW = Date.parse('2026-01-01T12:00:00Z');

/** dstack's series for GPUs whose values (latest first) are `gpus[i]`, one sample every 10 s back from `latestAgoMs`. */
function metricsOf(gpus: number[][], latestAgoMs = 0): JobMetrics {
  const count = gpus[0]?.length ?? 0;
  const timestamps = Array.from({ length: count }, (_, index) =>
    new Date(NOW - latestAgoMs - index * 10_000).toISOString(),
  );
  return {
    metrics: [
      { name: 'cpu_usage_percent', timestamps, values: timestamps.map(() => 50) },
      ...gpus.map((values, gpu) => ({ name: `gpu_util_percent_gpu${gpu}`, timestamps, values })),
    ],
  };
}

/** Samples every 10 s covering `seconds` of the window. */
const samples = (seconds: number, value: number) => Array.from({ length: seconds / 10 + 1 }, () => value);

describe("dstack's utilization policy verdict", () => {
  it('terminates when one GPU stayed under the threshold in every sample of a covered window', () => {
    expect(lowGpuUtilization(POLICY, metricsOf([samples(300, 3)]), NOW)).toBe(true);
    // Any GPU, as dstack: one idle GPU of two is enough.
    expect(lowGpuUtilization(POLICY, metricsOf([samples(300, 3), samples(300, 95)]), NOW)).toBe(true);
  });

  it('keeps the job when a sample reached the threshold', () => {
    const once = samples(300, 3);
    once[7] = 10;
    expect(lowGpuUtilization(POLICY, metricsOf([once]), NOW)).toBe(false);
    expect(lowGpuUtilization({ ...POLICY, min_gpu_utilization: 0 }, metricsOf([samples(300, 0)]), NOW)).toBe(
      false,
    );
  });

  it('decides nothing before the samples reach back to within a minute of the window start', () => {
    // 4 minutes of samples cover a 5-minute window (dstack allows one minute); 3.5 do not.
    expect(lowGpuUtilization(POLICY, metricsOf([samples(240, 3)]), NOW)).toBe(true);
    expect(lowGpuUtilization(POLICY, metricsOf([samples(210, 3)]), NOW)).toBeNull();
  });

  it('decides nothing without GPU series (no GPU, or figures that could not be read)', () => {
    expect(lowGpuUtilization(POLICY, metricsOf([]), NOW)).toBeNull();
    expect(lowGpuUtilization(POLICY, { metrics: [] }, NOW)).toBeNull();
  });

  it("words the termination as dstack's", () => {
    expect(utilizationPolicyMessage(POLICY)).toBe('The job GPU utilization below 10% for 300 seconds');
  });
});

describe('utilization_policy at plan time', () => {
  const configuration = { type: 'task', commands: ['true'], utilization_policy: POLICY } as RunConfiguration;
  const offer = (gpus: number) =>
    ({
      instance: {
        resources: { gpus: Array.from({ length: gpus }, () => ({ name: 'A100', memory_mib: 81920 })) },
      },
    }) as unknown as InstanceOfferWithAvailability;

  it('is refused when no offer of any job has a GPU, naming the field', () => {
    expect(utilizationPolicyRefusal(configuration, [[offer(0), offer(0)]])).toEqual({
      path: 'utilization_policy',
      reason: expect.stringContaining('none of the 2 offers has a GPU'),
    });
  });

  it('passes when an offer has a GPU, when there are no offers at all, and without a policy', () => {
    expect(utilizationPolicyRefusal(configuration, [[offer(0)], [offer(1)]])).toBeNull();
    expect(utilizationPolicyRefusal(configuration, [[]])).toBeNull();
    expect(
      utilizationPolicyRefusal({ type: 'task', commands: ['true'] } as RunConfiguration, [[offer(0)]]),
    ).toBeNull();
  });
});
