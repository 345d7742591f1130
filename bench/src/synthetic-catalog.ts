import { type AcceleratorVendor, type CatalogItem, createCatalogItem } from '@dstack/catalog';
// Not the package's root: it carries the conformance suite, which needs vitest running.
import { seededRandom } from '@dstack/testing/seeded-random';

// [name, GiB, vendor, USD per GPU-hour on demand]
const GPUS: ReadonlyArray<readonly [string, number, AcceleratorVendor, number]> = [
  ['T4', 16, 'nvidia', 0.35],
  ['L4', 24, 'nvidia', 0.7],
  ['A10G', 24, 'nvidia', 1.0],
  ['L40S', 48, 'nvidia', 1.9],
  ['A100', 40, 'nvidia', 2.9],
  ['A100', 80, 'nvidia', 3.9],
  ['H100', 80, 'nvidia', 6.9],
  ['H200', 141, 'nvidia', 8.5],
  ['MI300X', 192, 'amd', 4.5],
  ['RTX4090', 24, 'nvidia', 0.5],
];
const GPU_COUNTS = [1, 1, 2, 4, 8];
const CPU_SIZES = [2, 4, 8, 16, 32, 48, 64, 96];
const REGIONS = [
  ...['us-east-1', 'us-east-2', 'us-west-1', 'us-west-2', 'ca-central-1', 'sa-east-1'],
  ...['eu-west-1', 'eu-west-2', 'eu-west-3', 'eu-central-1', 'eu-north-1', 'eu-south-1'],
  ...['ap-south-1', 'ap-northeast-1', 'ap-northeast-2', 'ap-southeast-1', 'ap-southeast-2', 'me-south-1'],
];
/** Rows per instance type on average: a real catalog lists each type in many locations and both markets. */
const ROWS_PER_TYPE = 30;

const pick = <T>(random: () => number, list: readonly T[]): T =>
  list[Math.floor(random() * list.length)] as T;
const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;

type InstanceType = Omit<CatalogItem, 'provider' | 'location' | 'spot' | 'flags' | 'providerData'>;

function generateInstanceType(random: () => number, index: number): InstanceType {
  const base = { diskSize: null };
  if (random() < 0.7) {
    const [gpuName, gpuMemory, gpuVendor, perGpu] = pick(random, GPUS);
    const gpuCount = pick(random, GPU_COUNTS);
    const cpu = gpuCount * pick(random, [4, 8, 12, 16, 24]);
    return {
      ...base,
      instanceName: `${gpuName.toLowerCase()}x${gpuCount}.${cpu}c-${index}`,
      price: gpuCount * perGpu * (0.8 + random() * 0.5),
      cpu,
      memory: cpu * pick(random, [4, 8]),
      gpuCount,
      gpuName,
      gpuMemory,
      gpuVendor,
      cpuArch: 'x86',
    };
  }
  const cpu = pick(random, CPU_SIZES);
  return {
    ...base,
    instanceName: `cpu.${cpu}c-${index}`,
    price: cpu * 0.045 * (0.8 + random() * 0.5),
    cpu,
    memory: cpu * pick(random, [2, 4, 8]),
    gpuCount: 0,
    gpuName: null,
    gpuMemory: null,
    gpuVendor: null,
    cpuArch: random() < 0.2 ? 'arm' : 'x86',
  };
}

/**
 * A synthetic catalog for load and query benchmarks, shaped like a real one: a
 * pool of instance types (70 % with 1–8 GPUs of mixed models, 30 % CPU-only),
 * each offered in several of 18 regions, about half of the rows spot at 30–70 %
 * of on-demand; sorted by price as gpuhunt writes its files. Same seed, same rows.
 */
export function generateSyntheticCatalog(options: {
  rows: number;
  seed?: number;
  provider?: string;
}): CatalogItem[] {
  const random = seededRandom(options.seed ?? 42);
  const provider = options.provider ?? 'aws';
  const types = Array.from({ length: Math.max(1, Math.ceil(options.rows / ROWS_PER_TYPE)) }, (_, index) =>
    generateInstanceType(random, index),
  );
  const items: CatalogItem[] = [];
  for (let index = 0; index < options.rows; index++) {
    const type = pick(random, types);
    const spot = random() < 0.5;
    const regionFactor = 0.9 + random() * 0.3;
    const discount = spot ? 0.3 + random() * 0.4 : 1;
    items.push(
      createCatalogItem({
        ...type,
        provider,
        location: pick(random, REGIONS),
        price: round(type.price * regionFactor * discount, 5),
        spot,
      }),
    );
  }
  return items.sort((a, b) => a.price - b.price);
}
