/**
 * Whether an existing instance can take a job: its offer's resources satisfy
 * the job's requirements (dstack's pool offer filter). The disk of an existing
 * instance is fixed, so it must be large enough too.
 */
import type { InstanceOfferWithAvailability, Range, Requirements } from '@dstack/core';

function inRange(value: number, range: Range | null | undefined): boolean {
  if (!range) return true;
  if (range.min != null && value < range.min) return false;
  if (range.max != null && value > range.max) return false;
  return true;
}

export function offerSatisfies(offer: InstanceOfferWithAvailability, requirements: Requirements): boolean {
  const resources = offer.instance.resources;
  const wanted = requirements.resources;
  if (requirements.max_price != null && offer.price > requirements.max_price) return false;
  if (requirements.spot != null && resources.spot !== requirements.spot) return false;
  if (wanted.cpu.arch && resources.cpu_arch && wanted.cpu.arch !== resources.cpu_arch) return false;
  if (!inRange(resources.cpus, wanted.cpu.count)) return false;
  if (!inRange(resources.memory_mib / 1024, wanted.memory)) return false;
  if (
    wanted.disk &&
    resources.disk.size_mib > 0 &&
    !inRange(resources.disk.size_mib / 1024, wanted.disk.size)
  ) {
    return false;
  }
  const gpu = wanted.gpu;
  if (!gpu) return true;
  const gpus = resources.gpus;
  if (!inRange(gpus.length, gpu.count)) return false;
  if (gpus.length === 0) return true;
  const names = gpu.name?.map((name) => name.toLowerCase());
  for (const device of gpus) {
    if (gpu.vendor && device.vendor !== gpu.vendor) return false;
    if (names && !names.includes(device.name.toLowerCase())) return false;
    if (!inRange(device.memory_mib / 1024, gpu.memory)) return false;
  }
  const totalMemory = gpus.reduce((sum, device) => sum + device.memory_mib / 1024, 0);
  return inRange(totalMemory, gpu.total_memory);
}
