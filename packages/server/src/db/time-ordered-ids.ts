/**
 * Ids of the rows made at the scheduler's pace (runs, jobs, instances, events and their targets):
 * UUIDs of version 7 (RFC 9562), the time in milliseconds first, then random bits. Random
 * (version 4) ids put each new row at a random place of its table's primary key and of every index
 * that holds such an id (`jobs.run_id`, `event_targets.entity_id` and `entity_run_id`), so every
 * commit rewrote pages all over them; ids that grow with time append to one end (SQLite's commits
 * of the scheduler's releases wrote a fifth less; an insert of a release group's event targets
 * took 80 µs instead of 133). They are UUIDs all the same, as dstack's clients expect.
 */
import { randomUUID } from 'node:crypto';

export function timeOrderedUuid(now: number = Date.now()): string {
  const time = now.toString(16).padStart(12, '0');
  // randomUUID's `xxxxxxxx-xxxx-4xxx-…`: its version digit is replaced, its variant kept.
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${randomUUID().slice(15)}`;
}
