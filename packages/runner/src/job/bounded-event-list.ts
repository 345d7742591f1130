/**
 * An append-only list of timestamped events, ordered by timestamp, that keeps only the newest
 * `capacity` entries. Finding "events newer than T" is a binary search.
 */
export class BoundedEventList<T extends { readonly timestamp: number }> {
  private items: T[] = [];
  /** Index of the oldest kept item: dropping moves it forward, compaction happens in bulk. */
  private head = 0;

  constructor(private readonly capacity: number) {}

  get length(): number {
    return this.items.length - this.head;
  }

  /** Appends an event (its timestamp must exceed the last one); returns how many old events were dropped. */
  push(item: T): number {
    this.items.push(item);
    let dropped = 0;
    while (this.length > this.capacity) {
      this.head += 1;
      dropped += 1;
    }
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return dropped;
  }

  /** The event at `index` (0 = oldest kept). */
  at(index: number): T | undefined {
    return this.items[this.head + index];
  }

  /** Index of the first event whose timestamp is strictly greater than `timestamp` (length when none). */
  firstAfter(timestamp: number): number {
    let low = this.head;
    let high = this.items.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.items[middle]!.timestamp <= timestamp) {
        low = middle + 1;
      } else {
        high = middle;
      }
    }
    return low - this.head;
  }
}
