/**
 * Records events (dstack's `services/events.emit`): a message in the past tense, who acted (a user
 * through the API, or the system in a pipeline) and what it is about. Callers pass the
 * transaction that makes the change, so the change and its event are stored together or not at all.
 */
import type { EventTargetType } from '@dstack/core';
import type { Insertable, Kysely } from 'kysely';
import type {
  Database,
  EventsTable,
  EventTargetsTable,
  FleetsTable,
  InstancesTable,
  JobsTable,
  RunsTable,
  UsersTable,
  VolumesTable,
} from '../db/schema.js';
import { timeOrderedUuid } from '../db/time-ordered-ids.js';
import type { EventSettings } from './event-settings.js';

/** Who caused an event: a user (an API request) or the system (a pipeline's own decision). */
export type EventActor = { kind: 'system' } | { kind: 'user'; userId: string; userName: string };

export const SYSTEM_ACTOR: EventActor = { kind: 'system' };

export function userActor(user: Pick<UsersTable, 'id' | 'name'>): EventActor {
  return { kind: 'user', userId: user.id, userName: user.name };
}

/** What an event is about. Ancestors (`runId`, `fleetId`) let `within_runs`/`within_fleets` find it. */
export interface EventTargetRef {
  type: EventTargetType;
  projectId: string | null;
  id: string;
  name: string;
  runId?: string | null;
  fleetId?: string | null;
}

export interface NewEvent {
  message: string;
  actor: EventActor;
  targets: readonly EventTargetRef[];
}

export const eventTargets = {
  run: (run: Pick<RunsTable, 'id' | 'project_id' | 'run_name'>): EventTargetRef => ({
    type: 'run',
    projectId: run.project_id,
    id: run.id,
    name: run.run_name,
    runId: run.id,
  }),
  job: (job: Pick<JobsTable, 'id' | 'project_id' | 'job_name' | 'run_id'>): EventTargetRef => ({
    type: 'job',
    projectId: job.project_id,
    id: job.id,
    name: job.job_name,
    runId: job.run_id,
  }),
  fleet: (fleet: Pick<FleetsTable, 'id' | 'project_id' | 'name'>): EventTargetRef => ({
    type: 'fleet',
    projectId: fleet.project_id,
    id: fleet.id,
    name: fleet.name,
    fleetId: fleet.id,
  }),
  instance: (instance: Pick<InstancesTable, 'id' | 'project_id' | 'name' | 'fleet_id'>): EventTargetRef => ({
    type: 'instance',
    projectId: instance.project_id,
    id: instance.id,
    name: instance.name,
    fleetId: instance.fleet_id,
  }),
  volume: (volume: Pick<VolumesTable, 'id' | 'project_id' | 'name'>): EventTargetRef => ({
    type: 'volume',
    projectId: volume.project_id,
    id: volume.id,
    name: volume.name,
  }),
  /** A gateway: any row with an id, a project and a name. */
  gateway: (gateway: { id: string; project_id: string; name: string }): EventTargetRef => ({
    type: 'gateway',
    projectId: gateway.project_id,
    id: gateway.id,
    name: gateway.name,
  }),
};

let lastRecordedAt = 0;

/**
 * A time for a new event: now, but always after the last one this process recorded, so that the
 * events of one change (a run submitted, then its job created) list in the order they happened.
 */
function nextRecordedAt(): number {
  lastRecordedAt = Math.max(Date.now(), lastRecordedAt + 1);
  return lastRecordedAt;
}

/** dstack's rule: one line, no trailing period. */
function normalizeMessage(message: string): string {
  return message.trim().replace(/\.+$/, '').replace(/\n/g, ' ');
}

/** The rows of recorded events, as `events` and `event_targets` store them. */
export interface EventRows {
  events: Insertable<EventsTable>[];
  targets: Insertable<EventTargetsTable>[];
}

/** Rows recorded through a transaction whose events are inserted at its end, by that transaction. */
const deferred = new WeakMap<Kysely<Database>, EventRows>();

/**
 * Makes `recordEvents` through `transaction` add its rows to `rows` instead of inserting them, until
 * `stopDeferringEvents`: a group of releases (pipelines/release-groups.ts) inserts the events of
 * those that were stored in one statement per table, with `insertEventRows`, before it commits.
 */
export function deferEvents(transaction: Kysely<Database>, rows: EventRows): void {
  deferred.set(transaction, rows);
}

export function stopDeferringEvents(transaction: Kysely<Database>): void {
  deferred.delete(transaction);
}

/** Rows per insert statement: well under SQLite's limit of bound values (8 columns a target). */
const ROWS_PER_INSERT = 500;

/** Inserts event rows through `db`, a few hundred per statement. */
export async function insertEventRows(db: Kysely<Database>, rows: EventRows): Promise<void> {
  for (let start = 0; start < rows.events.length; start += ROWS_PER_INSERT) {
    await db
      .insertInto('events')
      .values(rows.events.slice(start, start + ROWS_PER_INSERT))
      .execute();
  }
  for (let start = 0; start < rows.targets.length; start += ROWS_PER_INSERT) {
    await db
      .insertInto('event_targets')
      .values(rows.targets.slice(start, start + ROWS_PER_INSERT))
      .execute();
  }
}

/**
 * Adds events through `db` (pass the transaction that makes the change). Nothing is written when
 * events are kept for 0 seconds.
 */
export async function recordEvents(
  db: Kysely<Database>,
  settings: EventSettings,
  events: readonly NewEvent[],
): Promise<void> {
  if (settings.ttlSeconds <= 0 || events.length === 0) return;
  const eventRows: EventRows['events'] = [];
  const targetRows: EventRows['targets'] = [];
  for (const event of events) {
    if (event.targets.length === 0) throw new Error(`event "${event.message}" has no target`);
    const message = normalizeMessage(event.message);
    if (!message) throw new Error('an event needs a message');
    const recordedAt = nextRecordedAt();
    // Its time in the id too: ids then sort as the events were recorded, one after the other.
    const id = timeOrderedUuid(recordedAt);
    eventRows.push({
      id,
      message,
      recorded_at: recordedAt,
      actor_user_id: event.actor.kind === 'user' ? event.actor.userId : null,
      actor_user_name: event.actor.kind === 'user' ? event.actor.userName : null,
    });
    for (const [index, target] of event.targets.entries()) {
      targetRows.push({
        // Ordered within the event as given: the first target is what the event is mainly about.
        id: `${id}:${String(index).padStart(3, '0')}`,
        event_id: id,
        entity_type: target.type,
        entity_project_id: target.projectId,
        entity_run_id: target.runId ?? null,
        entity_fleet_id: target.fleetId ?? null,
        entity_id: target.id,
        entity_name: target.name,
      });
    }
  }
  const later = deferred.get(db);
  if (later) {
    later.events.push(...eventRows);
    later.targets.push(...targetRows);
    return;
  }
  await insertEventRows(db, { events: eventRows, targets: targetRows });
}

/** One event; see `recordEvents`. */
export function recordEvent(db: Kysely<Database>, settings: EventSettings, event: NewEvent): Promise<void> {
  return recordEvents(db, settings, [event]);
}
