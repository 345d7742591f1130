/**
 * Millisecond timestamps that strictly increase: when two events fall in the same
 * millisecond the later one is bumped by 1. Clients page through events with
 * "everything newer than the last timestamp I saw", which only works if no two
 * events share a timestamp.
 */
export class MonotonicClock {
  private last = 0;

  next(): number {
    this.last = Math.max(Date.now(), this.last + 1);
    return this.last;
  }
}
