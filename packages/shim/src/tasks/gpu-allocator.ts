/**
 * Which of the host's GPUs each task holds (dstack's shim `GpuLock`): a task asking for N GPUs
 * gets N that no other task holds, so tasks sharing a host split into blocks never share a GPU.
 * A task holds its GPUs until it is terminated.
 */
export class GpuAllocator {
  /** Task id → the GPU ids it holds. */
  private readonly held = new Map<string, readonly string[]>();

  /**
   * `hostGpuIds`: the host's GPUs as the runtimes name them (NVIDIA indices); empty when none
   * were found. `known`: the list was given (a shim with a share of the host), so an empty one
   * means no GPUs for its tasks rather than GPUs unknown. Default false.
   */
  constructor(
    private readonly hostGpuIds: readonly string[],
    private readonly options: { known?: boolean } = {},
  ) {}

  /**
   * Gives `taskId` `count` free GPUs (-1: every free one, 0: none), lowest ids first. Null when
   * the host's GPUs are unknown: the runtime then passes the count on as is. Throws when fewer
   * than `count` are free.
   */
  acquire(taskId: string, count: number): readonly string[] | null {
    if (this.hostGpuIds.length === 0 && !this.options.known) return null;
    const busy = new Set([...this.held.values()].flat());
    const free = this.hostGpuIds.filter((id) => !busy.has(id));
    if (count > free.length) {
      throw new Error(
        `the task asks for ${count} GPUs but ${free.length} of the host's ${this.hostGpuIds.length} are free`,
      );
    }
    const taken = count === -1 ? free : free.slice(0, count);
    this.held.set(taskId, taken);
    return taken;
  }

  /** Frees the GPUs `taskId` holds. Idempotent. */
  release(taskId: string): void {
    this.held.delete(taskId);
  }
}
