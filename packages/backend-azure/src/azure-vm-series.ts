/**
 * gpuhunt's knowledge of Azure's VM series (`providers/azure.py`): the GPU of each GPU series
 * (Compute's resource SKUs give the count, not the model), the retired series it never collects,
 * and the series its published `azure.csv` keeps (`AzureProvider.filter`).
 */

/** A GPU series: its size-name pattern (after `Standard_`), gpuhunt's GPU name and GB per GPU. */
interface GpuSeries {
  readonly pattern: string;
  readonly gpuName: string;
  readonly gpuMemoryGb: number | null;
}

/** gpuhunt's `gpu_vm_series`, in its order (the first match wins). */
const GPU_SERIES: readonly GpuSeries[] = [
  { pattern: 'NC(\\d+)ads_A100_v4', gpuName: 'A100', gpuMemoryGb: 80 },
  { pattern: 'NC(\\d+)ads_A10_v4', gpuName: 'A10', gpuMemoryGb: 24 },
  { pattern: 'NC(\\d+)as_T4_v3', gpuName: 'T4', gpuMemoryGb: 16 },
  { pattern: 'NC(\\d+)r?s_v3', gpuName: 'V100', gpuMemoryGb: 16 },
  { pattern: 'NC(\\d+)adi?s_H100_v5', gpuName: 'H100NVL', gpuMemoryGb: 94 },
  { pattern: 'ND(\\d+)amsr_A100_v4', gpuName: 'A100', gpuMemoryGb: 80 },
  { pattern: 'ND(\\d+)asr_v4', gpuName: 'A100', gpuMemoryGb: 40 },
  { pattern: 'ND(\\d+)rs_v2', gpuName: 'V100', gpuMemoryGb: 32 },
  { pattern: 'ND(\\d+)isr_H200_v5', gpuName: 'H200', gpuMemoryGb: 141 },
  { pattern: 'NG(\\d+)adm?s_V620_v1', gpuName: 'V620', gpuMemoryGb: null },
  { pattern: 'NV(\\d+)adm?s_A10_v5', gpuName: 'A10', gpuMemoryGb: 24 },
  { pattern: 'NV(\\d+)as_v4', gpuName: 'MI25', gpuMemoryGb: null },
  { pattern: 'NV(\\d+)s_v3', gpuName: 'M60', gpuMemoryGb: null },
];

/** gpuhunt's `retired_vm_series` (Azure's previous-generation sizes), whole names. */
const RETIRED_SERIES = new RegExp(
  `^(${[
    'Basic_A(\\d+)',
    'Standard_A(\\d+)',
    'Standard_D(\\d+)',
    'Standard_DC(\\d+)s',
    'Standard_DS(\\d+)',
    'Standard_F(\\d+)',
    'Standard_F(\\d+)s',
    'Standard_G(\\d+)',
    'Standard_GS(\\d+)',
    'Standard_L(\\d+)s',
    'Standard_NC(\\d+)r?',
    'Standard_NC(\\d+)r?s_v2',
    'Standard_ND(\\d+)r?s',
    'Standard_NV(\\d+)',
    'Standard_NV(\\d+)s_v2',
  ].join('|')})$`,
);

/** The series gpuhunt publishes (`filter`), deprecated ones included for older dstack versions. */
const PUBLISHED_SERIES = new RegExp(
  `^Standard_(${[
    'D(\\d+)s_v6',
    // E128 and E192i are not GA yet.
    'E(2|4|8|16|20|32|48|64|96)s_v6',
    'F(\\d+)s_v2',
    'NC(\\d+)s_v3',
    'NC(\\d+)as_T4_v3',
    'NC(\\d+)adi?s_H100_v5',
    'ND(\\d+)rs_v2',
    'ND(\\d+)isr_H200_v5',
    'NV(\\d+)adm?s_A10_v5',
    'NC(\\d+)ads_A100_v4',
    'ND(\\d+)asr_v4',
    'ND(\\d+)amsr_A100_v4',
    'D(\\d+)s_v3',
    'E(\\d+)i?s_v4',
    'E(\\d+)-(\\d+)s_v4',
  ].join('|')})$`,
);

export function isRetiredVmSize(name: string): boolean {
  return RETIRED_SERIES.test(name);
}

export function isPublishedVmSize(name: string): boolean {
  return PUBLISHED_SERIES.test(name);
}

/**
 * gpuhunt's `get_gpu_name_memory`: the GPU of a size from its name, or nulls. An A10 size has a
 * share of the A10 (v4 sizes in 16ths, v5 sizes in 36ths of its vCPUs), so a share of its memory.
 */
export function azureGpuOf(vmSize: string): { gpuName: string | null; gpuMemoryGb: number | null } {
  for (const series of GPU_SERIES) {
    const match = new RegExp(`^Standard_${series.pattern}$`).exec(vmSize);
    if (!match) continue;
    let memory = series.gpuMemoryGb;
    const vcpus = Number(match[1]);
    if (memory !== null && series.gpuName === 'A10' && vmSize.endsWith('_v4'))
      memory *= Math.min(1, vcpus / 16);
    else if (memory !== null && series.gpuName === 'A10' && vmSize.endsWith('_v5'))
      memory *= Math.min(1, vcpus / 36);
    return { gpuName: series.gpuName, gpuMemoryGb: memory };
  }
  return { gpuName: null, gpuMemoryGb: null };
}
