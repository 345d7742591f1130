/**
 * Events: what happened to runs, jobs, fleets, instances, volumes and gateways, by whom
 * (dstack's `core/models/events.py` and `server/schemas/events.py`, same fields and limits).
 */
import * as z from 'zod';

export const EVENT_TARGET_TYPES = [
  'project',
  'user',
  'fleet',
  'instance',
  'run',
  'job',
  'volume',
  'gateway',
  'secret',
] as const;
export const EventTargetTypeSchema = z.enum(EVENT_TARGET_TYPES);
export type EventTargetType = z.output<typeof EventTargetTypeSchema>;

export const EventTargetSchema = z.object({
  /** One of `EVENT_TARGET_TYPES`; a string on the wire, so that new types do not break older clients. */
  type: z.string(),
  /** Null for targets bound to no project (users). */
  project_id: z.string().nullable(),
  project_name: z.string().nullable(),
  is_project_deleted: z.boolean().nullable(),
  id: z.string(),
  name: z.string(),
});
export type EventTarget = z.output<typeof EventTargetSchema>;

export const EventSchema = z.object({
  id: z.string(),
  message: z.string(),
  recorded_at: z.string(),
  /** Null when the system acted (a pipeline's transition). */
  actor_user_id: z.string().nullable(),
  actor_user: z.string().nullable(),
  is_actor_user_deleted: z.boolean().nullable(),
  targets: z.array(EventTargetSchema),
});
export type Event = z.output<typeof EventSchema>;

/** dstack's `MAX_FILTER_ITEMS`: keeps one request's query small. */
export const EVENT_FILTER_MAX_ITEMS = 16;
/** dstack's `LIST_EVENTS_DEFAULT_LIMIT`, also the largest page. */
export const LIST_EVENTS_DEFAULT_LIMIT = 100;

const ids = z.array(z.uuid()).min(1).max(EVENT_FILTER_MAX_ITEMS).nullish();

const TARGET_FILTERS = [
  'target_projects',
  'target_users',
  'target_fleets',
  'target_instances',
  'target_runs',
  'target_jobs',
  'target_volumes',
  'target_gateways',
  'target_secrets',
] as const;
const WITHIN_FILTERS = ['within_projects', 'within_fleets', 'within_runs'] as const;

/**
 * `POST /api/events/list`. dstack's client sends every field, unset ones as null. At most one
 * `target_*` and one `within_*` filter (two targets would always match nothing).
 */
export const ListEventsRequestSchema = z
  .object({
    target_projects: ids,
    target_users: ids,
    target_fleets: ids,
    target_instances: ids,
    target_runs: ids,
    target_jobs: ids,
    target_volumes: ids,
    target_gateways: ids,
    target_secrets: ids,
    within_projects: ids,
    within_fleets: ids,
    within_runs: ids,
    include_target_types: z.array(EventTargetTypeSchema).min(1).max(EVENT_FILTER_MAX_ITEMS).nullish(),
    /** User ids, or null for the system. */
    actors: z.array(z.uuid().nullable()).min(1).max(EVENT_FILTER_MAX_ITEMS).nullish(),
    prev_recorded_at: z.iso.datetime({ offset: true, local: true }).nullish(),
    prev_id: z.uuid().nullish(),
    limit: z.number().int().min(1).max(LIST_EVENTS_DEFAULT_LIMIT).nullish(),
    ascending: z.boolean().nullish(),
  })
  .superRefine((request, ctx) => {
    for (const [kind, names] of [
      ['target_*', TARGET_FILTERS],
      ['within_*', WITHIN_FILTERS],
    ] as const) {
      const set = names.filter((name) => request[name] != null);
      if (set.length > 1) {
        ctx.addIssue({
          code: 'custom',
          path: [set[1] as string],
          message: `At most one ${kind} filter can be set at a time. Got ${set.join(', ')}`,
        });
      }
    }
  });
export type ListEventsRequest = z.output<typeof ListEventsRequestSchema>;
