/**
 * In-process notice that a run has new log rows: `storeRunnerLogs` tells the
 * `logs/stream` answers of this process, so they push the lines at once.
 * Logs stored by another replica are not announced here; streams find them
 * with their periodic database re-check.
 */
export class LogNotifications {
  readonly #listeners = new Map<string, Set<() => void>>();

  /** Tells the listeners of `runId` that it has new log rows. */
  notify(runId: string): void {
    for (const listener of this.#listeners.get(runId) ?? []) listener();
  }

  /** Calls `listener` on every notice for `runId` until the returned function is called. */
  subscribe(runId: string, listener: () => void): () => void {
    let listeners = this.#listeners.get(runId);
    if (!listeners) {
      listeners = new Set();
      this.#listeners.set(runId, listeners);
    }
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.#listeners.get(runId) === listeners) this.#listeners.delete(runId);
    };
  }

  /** How many listeners are subscribed (to `runId`, or in all): streams still open. */
  listenerCount(runId?: string): number {
    if (runId !== undefined) return this.#listeners.get(runId)?.size ?? 0;
    let count = 0;
    for (const listeners of this.#listeners.values()) count += listeners.size;
    return count;
  }
}
