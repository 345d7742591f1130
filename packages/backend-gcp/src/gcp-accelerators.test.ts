import type { Gpu } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import {
  acceleratorTypeOf,
  GCP_ACCELERATOR_DETAILS,
  gpuQuotaMetric,
  takesGuestAccelerators,
} from './gcp-accelerators.js';

const gpu = (name: string, memoryGib: number): Gpu => ({
  name,
  memory_mib: memoryGib * 1024,
  vendor: 'nvidia',
});

describe('GCP accelerators and quotas', () => {
  it("maps the catalog's GPUs to Compute's accelerator types and quota metrics", () => {
    expect(acceleratorTypeOf(gpu('T4', 16), 'n1-standard-4')).toBe('nvidia-tesla-t4');
    expect(acceleratorTypeOf(gpu('A100', 40), 'a2-highgpu-1g')).toBe('nvidia-tesla-a100');
    expect(acceleratorTypeOf(gpu('A100', 80), 'a2-ultragpu-1g')).toBe('nvidia-a100-80gb');
    expect(acceleratorTypeOf(gpu('H100', 80), 'a3-highgpu-8g')).toBe('nvidia-h100-80gb');
    expect(acceleratorTypeOf(gpu('H100', 80), 'a3-megagpu-8g')).toBe('nvidia-h100-mega-80gb');
    expect(acceleratorTypeOf(gpu('L4', 24), 'g2-standard-4')).toBe('nvidia-l4');

    expect(gpuQuotaMetric('nvidia-tesla-t4', false)).toBe('NVIDIA_T4_GPUS');
    expect(gpuQuotaMetric('nvidia-tesla-t4', true)).toBe('PREEMPTIBLE_NVIDIA_T4_GPUS');
    expect(gpuQuotaMetric('nvidia-a100-80gb', false)).toBe('NVIDIA_A100_80GB_GPUS');
    expect(gpuQuotaMetric('nvidia-h100-80gb', false)).toBe('NVIDIA_H100_GPUS');
    expect(gpuQuotaMetric('nvidia-h100-mega-80gb', true)).toBe('PREEMPTIBLE_NVIDIA_H100_MEGA_GPUS');
    expect(gpuQuotaMetric('nvidia-l4', false)).toBe('NVIDIA_L4_GPUS');

    expect(takesGuestAccelerators('n1-standard-4')).toBe(true);
    expect(takesGuestAccelerators('g2-standard-4')).toBe(false);
    expect(acceleratorTypeOf(gpu('H200', 141), 'a3-ultragpu-8g')).toBe('nvidia-h200-141gb');
    expect(acceleratorTypeOf(gpu('K520', 4), 'n1-standard-4')).toBe('nvidia-tesla-k520');
  });

  it("gives back the accelerator type of every GPU the collector lists (the table's inverse)", () => {
    for (const [type, details] of Object.entries(GCP_ACCELERATOR_DETAILS)) {
      const machineType = type === 'nvidia-h100-mega-80gb' ? 'a3-megagpu-8g' : 'some-type-1g';
      expect(acceleratorTypeOf(gpu(details.name, details.memory), machineType), type).toBe(type);
    }
  });
});
