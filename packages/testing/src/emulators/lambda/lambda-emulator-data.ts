/**
 * What the Lambda emulator's account sees: Lambda Cloud's on-demand instance types as its
 * `GET /instance-types` describes them (names, descriptions gpuhunt parses, specs, prices in
 * cents per hour; the prices are Lambda's public list prices) and the regions it has images in.
 * The bundled catalog snapshot's `lambdalabs.csv` is what gpuhunt's collector makes of exactly
 * these (checked by a test), so plans and the emulator agree.
 */

/** One instance type as `GET /instance-types` gives its `instance_type`. */
export interface LambdaInstanceTypeSpec {
  readonly name: string;
  readonly description: string;
  readonly gpu_description: string;
  readonly price_cents_per_hour: number;
  readonly specs: {
    readonly vcpus: number;
    readonly memory_gib: number;
    readonly storage_gib: number;
    readonly gpus: number;
  };
}

function type(
  name: string,
  description: string,
  gpuDescription: string,
  priceCents: number,
  [vcpus, memoryGib, storageGib, gpus]: [number, number, number, number],
): LambdaInstanceTypeSpec {
  return {
    name,
    description,
    gpu_description: gpuDescription,
    price_cents_per_hour: priceCents,
    specs: { vcpus, memory_gib: memoryGib, storage_gib: storageGib, gpus },
  };
}

export const DEFAULT_LAMBDA_INSTANCE_TYPES: readonly LambdaInstanceTypeSpec[] = [
  type('gpu_1x_rtx6000', '1x RTX 6000 (24 GB)', 'RTX 6000 (24 GB)', 50, [14, 46, 512, 1]),
  type('gpu_1x_a10', '1x A10 (24 GB PCIe)', 'A10 (24 GB PCIe)', 75, [30, 200, 1400, 1]),
  type('gpu_1x_a6000', '1x RTX A6000 (48 GB)', 'RTX A6000 (48 GB)', 80, [14, 46, 512, 1]),
  type('gpu_2x_a6000', '2x RTX A6000 (48 GB)', 'RTX A6000 (48 GB)', 160, [28, 92, 1024, 2]),
  type('gpu_4x_a6000', '4x RTX A6000 (48 GB)', 'RTX A6000 (48 GB)', 320, [56, 184, 2048, 4]),
  type('gpu_1x_a100', '1x A100 (40 GB PCIe)', 'A100 (40 GB PCIe)', 129, [30, 200, 512, 1]),
  type('gpu_1x_a100_sxm4', '1x A100 (40 GB SXM4)', 'A100 (40 GB SXM4)', 129, [30, 200, 512, 1]),
  type('gpu_8x_a100', '8x A100 (40 GB SXM4)', 'A100 (40 GB SXM4)', 1032, [124, 1800, 6144, 8]),
  type('gpu_8x_a100_80gb_sxm4', '8x A100 (80 GB SXM4)', 'A100 (80 GB SXM4)', 1432, [240, 1800, 19456, 8]),
  type('gpu_1x_h100_pcie', '1x H100 (80 GB PCIe)', 'H100 (80 GB PCIe)', 249, [26, 200, 1024, 1]),
  type('gpu_8x_h100_sxm5', '8x H100 (80 GB SXM5)', 'H100 (80 GB SXM5)', 2392, [208, 1800, 24780, 8]),
  type('gpu_8x_v100', '8x Tesla V100 (16 GB)', 'Tesla V100 (16 GB)', 440, [92, 448, 5996, 8]),
  type('gpu_1x_gh200', '1x GH200 (96 GB)', 'GH200 (96 GB)', 149, [64, 432, 4096, 1]),
];

/** Lambda's region names and descriptions (a few of its public regions). */
export const DEFAULT_LAMBDA_REGIONS: readonly { readonly name: string; readonly description: string }[] = [
  { name: 'europe-central-1', description: 'Germany' },
  { name: 'us-east-1', description: 'Virginia, USA' },
  { name: 'us-west-1', description: 'California, USA' },
];
