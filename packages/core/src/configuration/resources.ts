/**
 * The resources requirement of a run or fleet: `cpu`, `memory`, `shm_size`, `gpu`, `disk`.
 */
import { CPU_ARCHITECTURES } from '@dstack/catalog';
import * as z from 'zod';
import { gpuSpecSchema, NO_GPU_REQUIREMENT_COUNT } from './gpu-spec.js';
import { memorySchema } from './memory.js';
import { intRangeSchema, memoryRangeSchema, parseCount, parseRangeText, type Range } from './range.js';
import { describeValue, isPlainObject, strictObject } from './schema-helpers.js';

/** Default CPU cores: `2..`. */
export const DEFAULT_CPU_COUNT: Range = { min: 2, max: null };
/** Default memory: `8GB..`. */
export const DEFAULT_MEMORY: Range = { min: 8, max: null };
/** Default disk: `100GB..`. */
export const DEFAULT_DISK_SIZE: Range = { min: 100, max: null };

const CPU_SPEC_EXPECTATION =
  'expected a count (e.g. 8 or 4..), an architecture (x86, arm) or both (e.g. arm:8)';

function normaliseCpuSpec(value: unknown, ctx: z.RefinementCtx): unknown {
  if (typeof value === 'number') return { count: { min: value, max: value } };
  if (typeof value === 'string') {
    const spec: Record<string, unknown> = {};
    const fail = (detail: string) => {
      ctx.addIssue({
        code: 'custom',
        message: `invalid CPU spec '${value}': ${CPU_SPEC_EXPECTATION}; ${detail}`,
        input: value,
      });
      return z.NEVER;
    };
    for (const token of value.replaceAll(' ', '').split(':')) {
      if (token === '') return fail('it has an empty part');
      if (token.includes('..') || /^\d+$/.test(token)) {
        if (spec.count) return fail('the count is given twice');
        try {
          spec.count = parseRangeText(token, parseCount);
        } catch (error) {
          return fail((error as Error).message);
        }
      } else {
        const arch = CPU_ARCHITECTURES.find((name) => name === token.toLowerCase());
        if (!arch) return fail(`'${token}' is not an architecture`);
        if (spec.arch) return fail('the architecture is given twice');
        spec.arch = arch;
      }
    }
    return spec;
  }
  // `{min, max}` is the pre-architecture form of a CPU count; dstack still accepts it.
  if (
    isPlainObject(value) &&
    ('min' in value || 'max' in value) &&
    !('count' in value) &&
    !('arch' in value)
  ) {
    return { count: value };
  }
  if (!isPlainObject(value)) {
    ctx.addIssue({
      code: 'custom',
      message: `invalid CPU spec: ${CPU_SPEC_EXPECTATION}; got ${describeValue(value)}`,
      input: value,
    });
    return z.NEVER;
  }
  return value;
}

const cpuSpecObjectSchema = strictObject({
  /** `x86` or `arm`; unset means decided from the GPU (superchips are arm), else x86. */
  arch: z.enum(CPU_ARCHITECTURES).optional(),
  /** Number of cores. Default `2..`. */
  count: intRangeSchema.default(() => ({ ...DEFAULT_CPU_COUNT })),
});

/** CPU requirement: `8`, `2..8`, `arm:8`, `x86:4..` or `{arch, count}`. */
export const cpuSpecSchema = z.preprocess(normaliseCpuSpec, cpuSpecObjectSchema);
export type CpuSpec = z.infer<typeof cpuSpecObjectSchema>;

const diskSpecObjectSchema = strictObject({
  /** Disk size in GB. */
  size: memoryRangeSchema,
});

/** Disk requirement: `100GB..`, `200GB` or `{size}`. */
export const diskSpecSchema = z.preprocess(
  (value) => (typeof value === 'string' || typeof value === 'number' ? { size: value } : value),
  diskSpecObjectSchema,
);
export type DiskSpec = z.infer<typeof diskSpecObjectSchema>;

const resourcesSpecObjectSchema = strictObject({
  /** CPU requirement. Default `2..` cores, any architecture. */
  cpu: cpuSpecSchema.default(() => ({ count: { ...DEFAULT_CPU_COUNT } })),
  /** RAM in GB. Default `8GB..`. */
  memory: memoryRangeSchema.default(() => ({ ...DEFAULT_MEMORY })),
  /** Shared memory size in GB; unset leaves the container default. */
  shm_size: memorySchema.optional(),
  /** GPU requirement. Default count `0..`: no GPU requirement. */
  gpu: gpuSpecSchema.default(() => ({ count: { ...NO_GPU_REQUIREMENT_COUNT } })),
  /** Disk requirement. Default `100GB..`. */
  disk: diskSpecSchema.default(() => ({ size: { ...DEFAULT_DISK_SIZE } })),
});

/** Resources requirement; every field has a default, so `{}` is valid. */
export const resourcesSpecSchema = resourcesSpecObjectSchema;
export type ResourcesSpec = z.infer<typeof resourcesSpecObjectSchema>;

/** The default resources requirement: cpu `2..`, memory `8GB..`, gpu `0..`, disk `100GB..`. */
export function defaultResourcesSpec(): ResourcesSpec {
  return resourcesSpecSchema.parse({});
}
