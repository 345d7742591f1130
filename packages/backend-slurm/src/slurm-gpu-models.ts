import { type AcceleratorVendor, findAccelerators } from '@dstack/catalog';
import type { Gpu } from '@dstack/core';
import { parseMemory } from '@dstack/core';

const VENDORS: readonly AcceleratorVendor[] = ['nvidia', 'amd', 'google', 'intel', 'tenstorrent'];

/**
 * A GPU model of `gpu_partitions` (dstack's `GPUModel.from_string`): `[vendor:]name[:memory]`,
 * e.g. `H200`, `A100:40GB`, `nvidia:A100`, `amd:MI300X:192GB`. With vendor and memory given the
 * name may be any; otherwise it must name one known accelerator (of that memory when given).
 * Throws an `Error` saying what is wrong.
 */
export function parseGpuModel(text: string): Gpu {
  const fields = text
    .split(':')
    .map((field) => field.trim())
    .filter((field) => field !== '');
  if (fields.length === 0 || fields.length > 3) {
    throw new Error(`"${text}" is not [vendor:]name[:memory]`);
  }
  let vendor: AcceleratorVendor | null = null;
  let name: string;
  let memory: string | null = null;
  const asVendor = (value: string) => VENDORS.find((known) => known === value.toLowerCase()) ?? null;
  if (fields.length === 3) {
    vendor = asVendor(fields[0] as string);
    if (vendor === null) throw new Error(`"${text}": unknown vendor "${fields[0]}"`);
    [, name, memory] = fields as [string, string, string];
  } else if (fields.length === 2) {
    vendor = asVendor(fields[0] as string);
    if (vendor === null) [name, memory] = fields as [string, string];
    else name = fields[1] as string;
  } else {
    name = fields[0] as string;
  }
  const memoryGib = memory === null ? null : parseMemory(memory);
  if (vendor !== null && memoryGib !== null) {
    return { vendor, name, memory_mib: Math.round(memoryGib * 1024) };
  }
  let known = findAccelerators({ names: [name.replace(/ /g, '')], vendors: vendor ? [vendor] : undefined });
  if (memoryGib !== null) known = known.filter((info) => info.memory === Math.round(memoryGib));
  if (known.length === 0) throw new Error(`"${text}": no known GPU model matches`);
  if (known.length > 1) {
    throw new Error(
      `"${text}": several GPU models match (${known.map((info) => `${info.name}:${info.memory}GB`).join(', ')}); give the memory`,
    );
  }
  const [info] = known as [(typeof known)[number]];
  return { vendor: info.vendor, name: info.name, memory_mib: info.memory * 1024 };
}
