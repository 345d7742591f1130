/**
 * What this process knows of the fleet instances its job passes are taking, so that waiting jobs
 * do not all race for the same instance. Every pass reads the fitting instances in price order;
 * with dozens of passes at once they all saw the same cheapest idle instance, and each tried it,
 * then the next, in a transaction of its own that the database's guard refused (about twelve
 * refused tries per placed job when 500 jobs waited). Here a pass skips an instance that
 * another pass of this process is taking at this moment, and one that a take since its read
 * filled. The database's guarded update stays the only judge (several replicas each have
 * their own book); this only spares the tries that are bound to fail.
 */

/** An instance's blocks as this process last saw them taken. */
interface LastTake {
  /** `performance.now()` of the take. */
  at: number;
  busyBlocks: number;
  totalBlocks: number;
}

/** Takes older than this are forgotten: any list read after them already shows them. */
const REMEMBERED_MS = 60_000;
/** How many instances' last takes are kept before the old ones are dropped. */
const PRUNE_ABOVE = 1_000;

export class InstanceTakes {
  /** Blocks of each instance a pass of this process is taking now (its transaction is open). */
  readonly #inFlight = new Map<string, number>();
  readonly #lastTake = new Map<string, LastTake>();

  /**
   * Whether a pass that read the instance at `readAt` (`performance.now()`) with `freeBlocks`
   * free should try to take `blocks` of it: false when takes in flight or since its read leave
   * too few.
   */
  worthTrying(instanceId: string, readAt: number, freeBlocks: number, blocks: number): boolean {
    const last = this.#lastTake.get(instanceId);
    const free = last && last.at > readAt ? last.totalBlocks - last.busyBlocks : freeBlocks;
    return blocks <= free - (this.#inFlight.get(instanceId) ?? 0);
  }

  /** Marks `blocks` of the instance as being taken until `take` settles. */
  async taking<T>(instanceId: string, blocks: number, take: () => Promise<T>): Promise<T> {
    this.#inFlight.set(instanceId, (this.#inFlight.get(instanceId) ?? 0) + blocks);
    try {
      return await take();
    } finally {
      const left = (this.#inFlight.get(instanceId) ?? blocks) - blocks;
      if (left > 0) this.#inFlight.set(instanceId, left);
      else this.#inFlight.delete(instanceId);
    }
  }

  /** Records a take the database accepted, with the instance's blocks it returned. */
  taken(instanceId: string, busyBlocks: number, totalBlocks: number): void {
    const now = performance.now();
    this.#lastTake.delete(instanceId);
    this.#lastTake.set(instanceId, { at: now, busyBlocks, totalBlocks });
    if (this.#lastTake.size <= PRUNE_ABOVE) return;
    // Map order is insertion order, and a take re-inserts its instance: the oldest come first.
    for (const [id, take] of this.#lastTake) {
      if (now - take.at < REMEMBERED_MS) break;
      this.#lastTake.delete(id);
    }
  }
}
