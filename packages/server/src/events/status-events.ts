/**
 * The events of status changes, worded as dstack words them ("Job status changed RUNNING ->
 * TERMINATING. Termination reason: DONE_BY_RUNNER"), for every table with a status. The pipeline
 * engine records one whenever a release changes a row's status; services that change a status
 * outside a pipeline's release call `statusChangeEvent` themselves.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import {
  type EventActor,
  type EventTargetRef,
  eventTargets,
  type NewEvent,
  recordEvent,
  SYSTEM_ACTOR,
} from './event-recorder.js';
import type { EventSettings } from './event-settings.js';

/**
 * The tables whose rows have a status and an event target: every pipeline table, so the engine's
 * releases record their status changes.
 */
export type StatusTable = 'runs' | 'jobs' | 'instances' | 'fleets' | 'volumes' | 'gateways';

/** What a status change of a row of `Table` sets: the status and, maybe, its reason. */
export type StatusUpdate<Table extends StatusTable> = Partial<Database[Table]>;

/**
 * The columns the events of a change read from the row it changes: its status, what words the
 * change (reasons, messages, reachability) and what names its target.
 */
export const STATUS_EVENT_COLUMNS = {
  runs: ['id', 'project_id', 'run_name', 'status', 'termination_reason'],
  jobs: [
    'id',
    'project_id',
    'run_id',
    'job_name',
    'status',
    'termination_reason',
    'termination_reason_message',
    'disconnected_at',
  ],
  instances: [
    'id',
    'project_id',
    'fleet_id',
    'name',
    'status',
    'termination_reason',
    'termination_reason_message',
    'unreachable',
  ],
  fleets: ['id', 'project_id', 'name', 'status', 'status_message'],
  volumes: ['id', 'project_id', 'name', 'status', 'status_message'],
  gateways: ['id', 'project_id', 'name', 'status', 'status_message'],
} as const satisfies { [Table in StatusTable]: readonly (keyof Database[Table] & string)[] };

const upper = (value: string) => value.toUpperCase();

function transition(kind: string, from: string, to: string): string {
  return `${kind} status changed ${upper(from)} -> ${upper(to)}`;
}

/** ". Termination reason: X (message)" when there is a reason to say. */
function terminationSuffix(reason: string | null | undefined, reasonMessage?: string | null): string {
  if (!reason) return '';
  return `. Termination reason: ${upper(reason)}${reasonMessage ? ` (${reasonMessage})` : ''}`;
}

function statusMessageSuffix(statusMessage: string | null | undefined): string {
  return statusMessage ? ` (${statusMessage})` : '';
}

/** Merges what a change sets into the row it changes: the reason may be set with the status or before it. */
function after<Row extends object>(before: Row, update: Partial<Row>): Row {
  return { ...before, ...update };
}

function describe<Table extends StatusTable>(
  table: Table,
  before: Database[Table],
  update: StatusUpdate<Table>,
): { message: string; target: EventTargetRef } | null {
  const row = after(before, update) as Database[StatusTable];
  if (row.status === before.status) return null;
  switch (table) {
    case 'runs': {
      const run = row as Database['runs'];
      const reason = run.status === 'terminating' ? run.termination_reason : null;
      return {
        message: transition('Run', before.status, run.status) + terminationSuffix(reason),
        target: eventTargets.run(run),
      };
    }
    case 'jobs': {
      const job = row as Database['jobs'];
      const ending = job.status === 'terminating';
      return {
        message:
          transition('Job', before.status, job.status) +
          (ending ? terminationSuffix(job.termination_reason, job.termination_reason_message) : ''),
        target: eventTargets.job(job),
      };
    }
    case 'instances': {
      const instance = row as Database['instances'];
      const ending =
        instance.status === 'terminating' ||
        (instance.status === 'terminated' && before.status !== 'terminating');
      return {
        message:
          transition('Instance', before.status, instance.status) +
          (ending ? terminationSuffix(instance.termination_reason, instance.termination_reason_message) : ''),
        target: eventTargets.instance(instance),
      };
    }
    case 'fleets': {
      const fleet = row as Database['fleets'];
      return {
        message: transition('Fleet', before.status, fleet.status) + statusMessageSuffix(fleet.status_message),
        target: eventTargets.fleet(fleet),
      };
    }
    case 'volumes': {
      const volume = row as Database['volumes'];
      return {
        message:
          transition('Volume', before.status, volume.status) + statusMessageSuffix(volume.status_message),
        target: eventTargets.volume(volume),
      };
    }
    case 'gateways': {
      const gateway = row as Database['gateways'];
      return {
        message:
          transition('Gateway', before.status, gateway.status) + statusMessageSuffix(gateway.status_message),
        target: eventTargets.gateway(gateway),
      };
    }
  }
  return null;
}

/**
 * The event of `update` applied to `before`, or null when it leaves the status as it was.
 * `before` is the row as it was when the change was decided (a pipeline's claimed row).
 */
export function statusChangeEvent<Table extends StatusTable>(
  table: Table,
  before: Database[Table],
  update: StatusUpdate<Table>,
  actor: EventActor = SYSTEM_ACTOR,
): NewEvent | null {
  const described = describe(table, before, update);
  return described ? { message: described.message, actor, targets: [described.target] } : null;
}

/**
 * Whether releasing `row` with `update` may record an event: it sets a status, or changes whether
 * an instance or a job answers. Lets the pipeline engine skip the reading of the row otherwise.
 */
export function mayBeEventful(row: object, update: object | undefined): boolean {
  if (!update) return false;
  const before = row as Record<string, unknown>;
  const after = update as Record<string, unknown>;
  if ('status' in after) return true;
  if ('unreachable' in after && Number(after.unreachable) !== Number(before.unreachable)) return true;
  return 'disconnected_at' in after && (after.disconnected_at == null) !== (before.disconnected_at == null);
}

/** dstack's "became unreachable/reachable" of an instance (`unreachable`) or a job (`disconnected_at`). */
function reachabilityEvent<Table extends StatusTable>(
  table: Table,
  before: Database[Table],
  update: StatusUpdate<Table>,
): { message: string; target: EventTargetRef } | null {
  if (table === 'instances' && 'unreachable' in update) {
    const instance = after(before as Database['instances'], update as Partial<Database['instances']>);
    const now = Number(instance.unreachable) === 1;
    if (now === (Number((before as Database['instances']).unreachable) === 1)) return null;
    return {
      message: `Instance became ${now ? 'unreachable' : 'reachable'}`,
      target: eventTargets.instance(instance),
    };
  }
  if (table === 'jobs' && 'disconnected_at' in update) {
    const job = after(before as Database['jobs'], update as Partial<Database['jobs']>);
    const now = job.disconnected_at != null;
    if (now === ((before as Database['jobs']).disconnected_at != null)) return null;
    return { message: `Job became ${now ? 'unreachable' : 'reachable'}`, target: eventTargets.job(job) };
  }
  return null;
}

/** Every event of `update` applied to `before`: its status change, its reachability change. */
export function rowChangeEvents<Table extends StatusTable>(
  table: Table,
  before: Database[Table],
  update: StatusUpdate<Table>,
  actor: EventActor = SYSTEM_ACTOR,
): NewEvent[] {
  const events: NewEvent[] = [];
  const status = statusChangeEvent(table, before, update, actor);
  if (status) events.push(status);
  const reachability = reachabilityEvent(table, before, update);
  if (reachability) events.push({ message: reachability.message, actor, targets: [reachability.target] });
  return events;
}

/**
 * Records the event of a status change made outside a pipeline's release (pass the transaction
 * that made it, after it changed the row), when it changed the status.
 */
export async function recordStatusChange<Table extends StatusTable>(
  db: Kysely<Database>,
  settings: EventSettings,
  table: Table,
  before: Database[Table],
  update: StatusUpdate<Table>,
  actor: EventActor = SYSTEM_ACTOR,
): Promise<void> {
  const event = statusChangeEvent(table, before, update, actor);
  if (event) await recordEvent(db, settings, event);
}
