/**
 * `POST /api/events/list` (dstack's `services/events.list_events`): the events a user may see
 * (global admins: all; others: those with a target in one of their projects, or about themselves),
 * narrowed by the request's filters, a page at a time ordered by `recorded_at` then `id`.
 */
import {
  type Event,
  type EventTargetType,
  LIST_EVENTS_DEFAULT_LIMIT,
  type ListEventsRequest,
} from '@dstack/core';
import type { ExpressionBuilder, Kysely } from 'kysely';
import type { AppContext } from '../context.js';
import type { Database, UsersTable } from '../db/schema.js';
import { isoTime } from '../http/iso-time.js';

type TargetExpression = ExpressionBuilder<Database, 'event_targets' | 'events'>;

/** `target_*` filters: the event has a target of that type with one of these ids. */
const TARGET_FILTER_TYPES = {
  target_projects: 'project',
  target_users: 'user',
  target_fleets: 'fleet',
  target_instances: 'instance',
  target_runs: 'run',
  target_jobs: 'job',
  target_volumes: 'volume',
  target_gateways: 'gateway',
  target_secrets: 'secret',
} as const satisfies Record<string, EventTargetType>;

/** `within_*` filters: the event has a target inside one of these (or is one of them). */
const WITHIN_FILTER_COLUMNS = {
  within_projects: 'entity_project_id',
  within_fleets: 'entity_fleet_id',
  within_runs: 'entity_run_id',
} as const;

/** The conditions on one target the request asks for; an event matches when one target meets them all. */
function requestedTargetConditions(request: ListEventsRequest) {
  return (eb: TargetExpression) => {
    const conditions = [];
    for (const [filter, type] of Object.entries(TARGET_FILTER_TYPES)) {
      const ids = request[filter as keyof typeof TARGET_FILTER_TYPES];
      if (ids) conditions.push(eb.and([eb('entity_type', '=', type), eb('entity_id', 'in', ids)]));
    }
    for (const [filter, column] of Object.entries(WITHIN_FILTER_COLUMNS)) {
      const ids = request[filter as keyof typeof WITHIN_FILTER_COLUMNS];
      if (ids) conditions.push(eb(column, 'in', ids));
    }
    if (request.include_target_types) conditions.push(eb('entity_type', 'in', request.include_target_types));
    return conditions;
  };
}

function hasTargetFilters(request: ListEventsRequest): boolean {
  return (
    [
      ...Object.keys(TARGET_FILTER_TYPES),
      ...Object.keys(WITHIN_FILTER_COLUMNS),
      'include_target_types',
    ] as const
  ).some((filter) => request[filter as keyof ListEventsRequest] != null);
}

/** The projects whose events `user` may see; null for a global admin (every one). */
async function visibleProjectIds(db: Kysely<Database>, user: UsersTable): Promise<string[] | null> {
  if (user.global_role === 'admin') return null;
  const rows = await db.selectFrom('members').select('project_id').where('user_id', '=', user.id).execute();
  return rows.map((row) => row.project_id);
}

/** A time the client sent; one without an offset is UTC, as dstack's naive datetimes are. */
function parseRequestTime(value: string): number {
  return Date.parse(/(Z|[+-]\d\d:?\d\d)$/i.test(value) ? value : `${value}Z`);
}

export async function listEvents(
  app: AppContext,
  user: UsersTable,
  request: ListEventsRequest,
): Promise<Event[]> {
  const { db } = app;
  const ascending = request.ascending ?? false;
  const limit = request.limit ?? LIST_EVENTS_DEFAULT_LIMIT;
  const projectIds = await visibleProjectIds(db, user);
  const requested = requestedTargetConditions(request);

  let query = db.selectFrom('events').selectAll('events');
  // Each event returned has a target the user wants to see (the filters)…
  if (hasTargetFilters(request)) {
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('event_targets')
          .select('event_targets.id')
          .whereRef('event_targets.event_id', '=', 'events.id')
          .where((inner) => inner.and(requested(inner))),
      ),
    );
  }
  // …and one the user may see (membership).
  if (projectIds !== null) {
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('event_targets')
          .select('event_targets.id')
          .whereRef('event_targets.event_id', '=', 'events.id')
          .where((inner) =>
            inner.or([
              ...(projectIds.length > 0 ? [inner('entity_project_id', 'in', projectIds)] : []),
              inner.and([inner('entity_type', '=', 'user'), inner('entity_id', '=', user.id)]),
            ]),
          ),
      ),
    );
  }
  if (request.actors) {
    const userIds = request.actors.filter((actor): actor is string => actor !== null);
    const system = request.actors.includes(null);
    query = query.where((eb) =>
      eb.or([
        ...(system ? [eb('actor_user_id', 'is', null)] : []),
        ...(userIds.length > 0 ? [eb('actor_user_id', 'in', userIds)] : []),
      ]),
    );
  }
  if (request.prev_recorded_at) {
    const prev = parseRequestTime(request.prev_recorded_at);
    const prevId = request.prev_id;
    // dstack's keyset: newest first ties break by id ascending, oldest first by id descending.
    query = query.where((eb) => {
      const beyond = eb('recorded_at', ascending ? '>' : '<', prev);
      if (!prevId) return beyond;
      return eb.or([
        beyond,
        eb.and([eb('recorded_at', '=', prev), eb('events.id', ascending ? '<' : '>', prevId)]),
      ]);
    });
  }
  const events = await query
    .orderBy('recorded_at', ascending ? 'asc' : 'desc')
    .orderBy('events.id', ascending ? 'desc' : 'asc')
    .limit(limit)
    .execute();
  if (events.length === 0) return [];

  const eventIds = events.map((event) => event.id);
  const targets = await db
    .selectFrom('event_targets')
    .leftJoin('projects', 'projects.id', 'event_targets.entity_project_id')
    .select([
      'event_targets.event_id',
      'event_targets.entity_type',
      'event_targets.entity_project_id',
      'event_targets.entity_id',
      'event_targets.entity_name',
      'projects.name as project_name',
      'projects.deleted as project_deleted',
    ])
    .where('event_targets.event_id', 'in', eventIds)
    .orderBy('event_targets.id')
    .execute();
  const actorIds = [...new Set(events.map((event) => event.actor_user_id).filter((id) => id !== null))];
  const actors =
    actorIds.length > 0
      ? await db.selectFrom('users').select(['id', 'name']).where('id', 'in', actorIds).execute()
      : [];
  const actorNames = new Map(actors.map((actor) => [actor.id, actor.name]));

  return events.map((event) => ({
    id: event.id,
    message: event.message,
    recorded_at: isoTime(Number(event.recorded_at)) as string,
    actor_user_id: event.actor_user_id,
    actor_user:
      event.actor_user_id === null ? null : (actorNames.get(event.actor_user_id) ?? event.actor_user_name),
    is_actor_user_deleted: event.actor_user_id === null ? null : !actorNames.has(event.actor_user_id),
    targets: targets
      .filter((target) => target.event_id === event.id)
      .map((target) => ({
        type: target.entity_type,
        project_id: target.entity_project_id,
        project_name: target.project_name ?? null,
        is_project_deleted:
          target.entity_project_id === null
            ? null
            : target.project_deleted === null || Number(target.project_deleted) === 1,
        id: target.entity_id,
        name: target.entity_name,
      })),
  }));
}
