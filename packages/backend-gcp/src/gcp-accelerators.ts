/**
 * GCP's accelerator types and the catalog's GPU names, both ways: gpuhunt's table, read by the
 * catalog collector (Compute's type → the GPU it lists) and inverted by the Compute (the offer's
 * GPU → the type `instances.insert` and the quota metrics take).
 */
import type { Gpu } from '@dstack/core';

/** gpuhunt's `accelerator_details`: Compute's accelerator type → the catalog's GPU name and GiB per GPU. */
export const GCP_ACCELERATOR_DETAILS: Readonly<
  Record<string, { readonly name: string; readonly memory: number }>
> = {
  'nvidia-b200': { name: 'B200', memory: 180 },
  'nvidia-a100-80gb': { name: 'A100', memory: 80 },
  'nvidia-h100-80gb': { name: 'H100', memory: 80 },
  'nvidia-h100-mega-80gb': { name: 'H100', memory: 80 },
  'nvidia-l4': { name: 'L4', memory: 24 },
  'nvidia-tesla-a100': { name: 'A100', memory: 40 },
  'nvidia-tesla-k80': { name: 'K80', memory: 12 },
  'nvidia-tesla-p100': { name: 'P100', memory: 16 },
  'nvidia-tesla-p4': { name: 'P4', memory: 8 },
  'nvidia-tesla-t4': { name: 'T4', memory: 16 },
  'nvidia-tesla-v100': { name: 'V100', memory: 16 },
  'nvidia-rtx-pro-6000': { name: 'RTXPRO6000', memory: 96 },
};

/** The H100 type of a3-megagpu machines: the same GPU by name and memory as `nvidia-h100-80gb`. */
const H100_MEGA_ACCELERATOR_TYPE = 'nvidia-h100-mega-80gb';

/** Accelerator types of GPUs the table does not name (gpuhunt does not collect them; a newer catalog may list them). */
const TYPES_OUTSIDE_THE_TABLE: Readonly<Record<string, string>> = { H200: 'nvidia-h200-141gb' };

/**
 * The catalog's GPU (name and memory) on `machineType` → Compute Engine's accelerator type: the
 * table's entry of that name with the nearest memory (A100 40 GB or 80 GB); a3-megagpu's H100s
 * are their own type. GPUs the table lacks follow Compute's older naming, `nvidia-tesla-{name}`.
 */
export function acceleratorTypeOf(gpu: Gpu, machineType: string): string {
  if (gpu.name === 'H100' && machineType.startsWith('a3-megagpu')) return H100_MEGA_ACCELERATOR_TYPE;
  const memoryGib = Math.round(gpu.memory_mib / 1024);
  let nearest: { type: string; distance: number } | undefined;
  for (const [type, details] of Object.entries(GCP_ACCELERATOR_DETAILS)) {
    if (details.name !== gpu.name || type === H100_MEGA_ACCELERATOR_TYPE) continue;
    const distance = Math.abs(details.memory - memoryGib);
    if (!nearest || distance < nearest.distance) nearest = { type, distance };
  }
  return nearest?.type ?? TYPES_OUTSIDE_THE_TABLE[gpu.name] ?? `nvidia-tesla-${gpu.name.toLowerCase()}`;
}

/** Machine families whose GPUs are attached as `guestAccelerators` (the others have them built in). */
const GUEST_ACCELERATOR_FAMILIES: ReadonlySet<string> = new Set(['n1']);

/** Whether the machine type takes its GPUs as `guestAccelerators` (N1 with T4, V100, P100, P4). */
export function takesGuestAccelerators(machineType: string): boolean {
  return GUEST_ACCELERATOR_FAMILIES.has(machineType.split('-')[0] ?? '');
}

/** Compute's quota metric of an accelerator type: `NVIDIA_T4_GPUS`, `PREEMPTIBLE_NVIDIA_A100_80GB_GPUS`. */
export function gpuQuotaMetric(acceleratorType: string, spot: boolean): string {
  const model = acceleratorType
    .replace(/^nvidia-(tesla-)?/, '')
    .replace(/^(h100|h100-mega|h200)-\d+gb$/, '$1')
    .toUpperCase()
    .replace(/-/g, '_');
  return `${spot ? 'PREEMPTIBLE_' : ''}NVIDIA_${model}_GPUS`;
}
