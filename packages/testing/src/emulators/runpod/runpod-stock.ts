/**
 * The emulated RunPod's capacity: free GPUs per GPU type and location (a data center of Secure
 * Cloud, a country of Community Cloud). A pod takes its GPUs and gives them back when terminated;
 * `lowestPrice` answers from what is free now.
 */
import type { RunpodGpuTypeSpec } from './runpod-emulator-data.js';

/** RunPod's words for a deploy nothing can serve (what dstack's users see in RunPod's answers). */
export const RUNPOD_NO_CAPACITY_MESSAGE =
  'There are no longer any instances available with the requested specifications. Please refresh and try again.';

export class RunpodStock {
  readonly #free = new Map<string, Map<string, number>>();

  constructor(gpuTypes: readonly RunpodGpuTypeSpec[]) {
    for (const gpuType of gpuTypes) this.#free.set(gpuType.id, new Map(Object.entries(gpuType.stock)));
  }

  free(gpuTypeId: string, location: string): number {
    return this.#free.get(gpuTypeId)?.get(location) ?? 0;
  }

  /** Every location with at least `count` free GPUs of the type, in the data's order. */
  locationsWith(gpuTypeId: string, count: number): string[] {
    return [...(this.#free.get(gpuTypeId)?.entries() ?? [])]
      .filter(([, free]) => free >= count)
      .map(([location]) => location);
  }

  take(gpuTypeId: string, location: string, count: number): void {
    this.#free.get(gpuTypeId)?.set(location, this.free(gpuTypeId, location) - count);
  }

  release(gpuTypeId: string, location: string, count: number): void {
    this.#free.get(gpuTypeId)?.set(location, this.free(gpuTypeId, location) + count);
  }
}

/** RunPod's `stockStatus` for what is free: `High`, `Medium`, `Low`, or null when nothing fits. */
export function stockStatus(free: number, count: number): 'High' | 'Medium' | 'Low' | null {
  if (free < count) return null;
  if (free >= count * 4) return 'High';
  return free >= count * 2 ? 'Medium' : 'Low';
}
