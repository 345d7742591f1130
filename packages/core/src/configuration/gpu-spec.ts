/**
 * The GPU requirement: `A100:80GB:2`, `24GB..:2`, `H100,H200:8`, `amd:MI300X:8`,
 * `tpu:v5litepod-8`, `nvidia:2`, `1..8`, `A100`, or the object form
 * `{vendor, name, count, memory, total_memory, compute_capability}`.
 *
 * The text form splits on `:` and each part is classified as in dstack: a vendor word, names
 * (start with a letter, comma-separated), memory (has a unit letter, may be a range), else a count.
 */
import { type AcceleratorVendor, getGpuVendor } from '@dstack/catalog';
import * as z from 'zod';
import { parseMemory } from './memory.js';
import { intRangeSchema, memoryRangeSchema, parseCount, parseRangeText, type Range } from './range.js';
import { describeValue, isPlainObject, strictObject } from './schema-helpers.js';

/** Vendors as stored; `tpu` is accepted for google and `tt` for tenstorrent. */
export const GPU_VENDORS = [
  'nvidia',
  'amd',
  'google',
  'intel',
  'tenstorrent',
] as const satisfies readonly AcceleratorVendor[];
export type GpuVendor = (typeof GPU_VENDORS)[number];

const VENDOR_ALIASES: Record<string, GpuVendor> = {
  nvidia: 'nvidia',
  amd: 'amd',
  google: 'google',
  tpu: 'google',
  intel: 'intel',
  tenstorrent: 'tenstorrent',
  tt: 'tenstorrent',
};

export const GPU_SPEC_EXPECTATION =
  'expected a vendor (nvidia, amd, tpu, intel), GPU names, memory (e.g. 80GB or 24GB..) or a count (e.g. 2 or 1..8)';

/** A GPU count when the spec names GPUs or memory but no count. */
export const DEFAULT_GPU_SPEC_COUNT: Range = { min: 1, max: null };
/** The GPU count when no GPU is requested: any number, including none. */
export const NO_GPU_REQUIREMENT_COUNT: Range = { min: 0, max: null };

/** Vendor word (`tpu`, `AMD`…) to the stored vendor, or undefined when not a vendor. */
export function parseGpuVendor(token: string): GpuVendor | undefined {
  return VENDOR_ALIASES[token.toLowerCase()];
}

/** Vendor of a known GPU name, or google for TPU slice names such as `v5litepod-8`. */
export function inferGpuVendor(name: string): GpuVendor | undefined {
  const known = getGpuVendor(name);
  if (known) return known;
  // TPU names carry a slice size (`v5litepod-8`, `v6e-16`) that the knowledge table omits.
  const tpuBase = /^(v\d+[a-z]*)-\d+$/i.exec(name)?.[1];
  return tpuBase && getGpuVendor(tpuBase) === 'google' ? 'google' : undefined;
}

class GpuSpecTextError extends Error {}

/** Parses the text form into the object form (before defaults); throws with a user-facing reason. */
export function parseGpuSpecText(text: string): Record<string, unknown> {
  const fail = (detail?: string): never => {
    throw new GpuSpecTextError(
      `invalid GPU spec '${text}': ${GPU_SPEC_EXPECTATION}${detail ? `; ${detail}` : ''}`,
    );
  };
  const compact = text.replaceAll(' ', '');
  if (compact === '') fail('got an empty value');
  const spec: Record<string, unknown> = {};
  const seen: Record<string, string> = {};
  const claim = (part: string, token: string) => {
    if (seen[part] !== undefined) fail(`'${token}' repeats the ${part} ('${seen[part]}')`);
    seen[part] = token;
  };
  for (const token of compact.split(':')) {
    if (token === '') fail(`'${text}' has an empty part between colons`);
    const vendor = parseGpuVendor(token);
    if (vendor) {
      claim('vendor', token);
      spec.vendor = vendor;
    } else if (/^[a-z]/i.test(token)) {
      claim('GPU names', token);
      const names = token.split(',');
      if (names.some((name) => name === '')) fail(`a GPU name in '${token}' is empty`);
      spec.name = names;
    } else if (/[a-z]/i.test(token)) {
      claim('memory', token);
      try {
        spec.memory = parseRangeText(token, parseMemory);
      } catch {
        fail(`'${token}' is not a memory size or range`);
      }
    } else {
      claim('count', token);
      try {
        spec.count = parseRangeText(token, parseCount);
      } catch {
        fail(`'${token}' is not a count or range of counts`);
      }
    }
  }
  return spec;
}

/**
 * Turns any accepted input into the object form, infers the vendor from known names and
 * reports vendor/name mismatches. Leaves shape errors to the object schema.
 */
function normaliseGpuSpec(value: unknown, ctx: z.RefinementCtx): unknown {
  let spec: Record<string, unknown>;
  if (value === 0 || value === '0') {
    // As in dstack, `gpu: 0` asks for exactly no GPU (CPU-only offers), unlike omitting `gpu`.
    return { count: { min: 0, max: 0 } };
  }
  if (typeof value === 'number') value = String(value);
  if (typeof value === 'string') {
    try {
      spec = parseGpuSpecText(value);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message, input: value });
      return z.NEVER;
    }
  } else if (isPlainObject(value)) {
    spec = { ...value };
  } else {
    ctx.addIssue({
      code: 'custom',
      message: `invalid GPU spec: ${GPU_SPEC_EXPECTATION}, or a mapping; got ${describeValue(value)}`,
      input: value,
    });
    return z.NEVER;
  }
  if (typeof spec.vendor === 'string') spec.vendor = parseGpuVendor(spec.vendor) ?? spec.vendor;
  if (typeof spec.name === 'string') spec.name = [spec.name];
  if (Array.isArray(spec.name)) {
    // `tpu-` name prefixes predate the vendor field; dstack still accepts them.
    spec.name = spec.name.map((name: unknown) => {
      if (typeof name === 'string' && name.toLowerCase().startsWith('tpu-')) {
        spec.vendor ??= 'google';
        return name.slice(4);
      }
      return name;
    });
    if (!checkVendor(spec, spec.name as unknown[], ctx)) return z.NEVER;
  }
  return spec;
}

function checkVendor(spec: Record<string, unknown>, names: unknown[], ctx: z.RefinementCtx): boolean {
  const vendors = new Map<GpuVendor, string>();
  for (const name of names) {
    if (typeof name !== 'string') continue;
    const vendor = inferGpuVendor(name);
    if (vendor && !vendors.has(vendor)) vendors.set(vendor, name);
  }
  const declared = typeof spec.vendor === 'string' ? spec.vendor : undefined;
  if (declared !== undefined) {
    for (const [vendor, name] of vendors) {
      if (vendor !== declared) {
        ctx.addIssue({
          code: 'custom',
          message: `GPU '${name}' is made by ${vendor}, not ${declared}`,
          input: name,
        });
        return false;
      }
    }
    return true;
  }
  if (vendors.size > 1) {
    const described = [...vendors].map(([vendor, name]) => `'${name}' (${vendor})`).join(' and ');
    ctx.addIssue({
      code: 'custom',
      message: `GPU names ${described} are from different vendors; list GPUs of one vendor`,
      input: names,
    });
    return false;
  }
  const [only] = vendors.keys();
  if (only) spec.vendor = only;
  return true;
}

/** Compute capability `"7.5"`, `7.5` or `[7, 5]`, stored as `[major, minor]`. */
export const computeCapabilitySchema = z.preprocess(
  (value, ctx) => {
    if (typeof value === 'number') value = Number.isInteger(value) ? `${value}.0` : String(value);
    if (typeof value === 'string') {
      const match = /^\s*(\d+)\.(\d+)\s*$/.exec(value);
      if (match) return [Number(match[1]), Number(match[2])];
      ctx.addIssue({
        code: 'custom',
        message: `invalid compute capability '${value}': expected major.minor, e.g. 7.5`,
        input: value,
      });
      return z.NEVER;
    }
    return value;
  },
  z.tuple([z.int().min(0), z.int().min(0)]),
);

const gpuSpecObjectSchema = strictObject({
  /** Inferred from known names when omitted; unset means any vendor (dstack then assumes nvidia). */
  vendor: z.enum(GPU_VENDORS).optional(),
  /** Acceptable GPU names; any of them will do. */
  name: z.array(z.string().min(1)).min(1).optional(),
  /** Number of GPUs. Default `1..` when a GPU spec is given. */
  count: intRangeSchema.default(() => ({ ...DEFAULT_GPU_SPEC_COUNT })),
  /** Memory of one GPU, in GB. */
  memory: memoryRangeSchema.optional(),
  /** Memory of all GPUs together, in GB. */
  total_memory: memoryRangeSchema.optional(),
  /** Minimum compute capability (NVIDIA), `[major, minor]`. */
  compute_capability: computeCapabilitySchema.optional(),
});

/**
 * The GPU requirement. Text and number forms are normalised to the object form; the vendor is
 * inferred from known names (MI300X → amd, v5litepod-8 → google). Count defaults to `1..`;
 * `gpu: 0` means exactly no GPU (`0..0`); omitting `gpu` means no requirement (`0..`).
 */
export const gpuSpecSchema = z.preprocess(normaliseGpuSpec, gpuSpecObjectSchema);
export type GpuSpec = z.infer<typeof gpuSpecObjectSchema>;
