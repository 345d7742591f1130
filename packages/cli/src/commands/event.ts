/**
 * `dstack event`: what happened to the project's runs, jobs, fleets, instances and volumes, one
 * line per event, as dstack prints them; `-w` keeps printing new ones until Ctrl-C.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type Event, type EventTarget, EventTargetTypeSchema, LIST_EVENTS_DEFAULT_LIMIT } from '@dstack/core';
import type { DstackApiClient, ListEventsRequest, RequestOptions } from '../api/client.js';
import type { CliIo } from '../io.js';
import { type Colors, createColors } from '../output/colors.js';
import { CommandError } from '../output/command-error.js';
import { abortOnInterrupt } from './abort-on-interrupt.js';
import { connect, type ProjectOption } from './connect.js';

export interface EventOptions extends ProjectOption {
  watch?: boolean;
  since?: string;
  /** Shorthand of `--within-run`: the run's events and its jobs'. */
  run?: string;
  /** Shorthand of `--within-fleet`: the fleet's events and its instances'. */
  fleet?: string;
  targetFleet?: string[];
  targetRun?: string[];
  targetVolume?: string[];
  targetGateway?: string[];
  withinFleet?: string[];
  withinRun?: string[];
  includeTargetType?: string[];
}

/** The filters of the request: the `target_*`, `within_*` and type filters dstack's CLI sends. */
type EventFilters = Pick<
  ListEventsRequest,
  | 'target_fleets'
  | 'target_runs'
  | 'target_volumes'
  | 'target_gateways'
  | 'within_projects'
  | 'within_fleets'
  | 'within_runs'
  | 'include_target_types'
>;

/** How often `-w` asks for new events (dstack's live-table interval). */
export const WATCH_INTERVAL_MS = 2_000;
/** Events may be committed a little after their `recorded_at`: `-w` looks back this far again. */
const EVENT_DELAY_TOLERANCE_MS = 20_000;

const pad = (value: number) => String(value).padStart(2, '0');

/** `2024-09-24 15:30:00` in the local time zone, as dstack prints `recorded_at`. */
function localTime(iso: string): string {
  const time = new Date(iso);
  return (
    `${time.getFullYear()}-${pad(time.getMonth() + 1)}-${pad(time.getDate())} ` +
    `${pad(time.getHours())}:${pad(time.getMinutes())}:${pad(time.getSeconds())}`
  );
}

/** `run hello`; a target of another project is `other/hello`. */
function formatTarget(target: EventTarget, currentProject: string): string {
  const foreign =
    target.project_name !== null && target.type !== 'project' && target.project_name !== currentProject;
  return `${target.type} ${foreign ? `${target.project_name}/` : ''}${target.name}`;
}

/** One line per event (dstack's `print_event`): `[time] [👤user] [targets] message`. */
export function formatEvent(event: Event, currentProject: string, colors: Colors): string {
  const targets = event.targets.map((target) => formatTarget(target, currentProject)).join(', ');
  const parts = [colors.dim(`[${localTime(event.recorded_at)}]`)];
  if (event.actor_user) parts.push(colors.dim(`[👤${event.actor_user}]`));
  parts.push(colors.dim(`[${targets}]`), event.message);
  return parts.join(' ');
}

const DURATION = /^(\d+)\s*([smhdw])$/;
const UNIT_MS: Record<string, number> = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 604800e3 };

/** `--since`: a duration back from now (`10s`, `5m`, `1d`) or an RFC 3339 time. */
export function parseSince(value: string, now = Date.now()): Date {
  const duration = DURATION.exec(value.trim());
  if (duration) return new Date(now - Number(duration[1]) * (UNIT_MS[duration[2] as string] as number));
  const time = Date.parse(value);
  if (Number.isNaN(time)) {
    throw new CommandError(
      `--since: expected a duration (10s, 5m, 1d) or an RFC 3339 time (2023-09-24T15:30:00Z), got '${value}'`,
    );
  }
  return new Date(time);
}

async function fleetId(client: DstackApiClient, name: string): Promise<string> {
  const fleet = (await client.listFleets()).find((each) => each.name === name);
  if (!fleet) throw new CommandError(`fleet ${name} not found`);
  return fleet.id;
}

async function volumeId(client: DstackApiClient, name: string): Promise<string> {
  const volume = await client.getVolume(name);
  if (!volume) throw new CommandError(`volume ${name} not found`);
  return volume.id;
}

function atMostOne(options: EventOptions, flags: readonly (keyof EventOptions)[], names: string): void {
  const set = flags.filter((flag) => options[flag] !== undefined);
  if (set.length > 1) throw new CommandError(`${names}: use only one of them`);
}

/** Resolves the names of the options to the ids the API filters by (dstack's `_build_filters`). */
async function buildFilters(client: DstackApiClient, options: EventOptions): Promise<EventFilters> {
  atMostOne(options, ['targetFleet', 'targetRun', 'targetVolume', 'targetGateway'], '--target-*');
  atMostOne(options, ['withinFleet', 'withinRun', 'run', 'fleet'], '--run, --fleet, --within-*');
  const ids = (names: string[], resolve: (name: string) => Promise<string>) =>
    Promise.all(names.map(resolve));
  const runId = async (name: string) => (await client.getRun(name)).id;
  const filters: EventFilters = {};
  if (options.targetFleet)
    filters.target_fleets = await ids(options.targetFleet, (name) => fleetId(client, name));
  else if (options.targetRun) filters.target_runs = await ids(options.targetRun, runId);
  else if (options.targetVolume)
    filters.target_volumes = await ids(options.targetVolume, (name) => volumeId(client, name));
  else if (options.targetGateway)
    filters.target_gateways = await ids(options.targetGateway, (name) => client.getGatewayId(name));
  const hasTargets = Object.keys(filters).length > 0;
  const withinRuns = options.withinRun ?? (options.run ? [options.run] : undefined);
  const withinFleets = options.withinFleet ?? (options.fleet ? [options.fleet] : undefined);
  if (withinFleets) filters.within_fleets = await ids(withinFleets, (name) => fleetId(client, name));
  else if (withinRuns) filters.within_runs = await ids(withinRuns, runId);
  else if (!hasTargets) {
    // By default the current project's events, unless a more specific filter is given.
    const project = (await client.listProjects()).find((each) => each.project_name === client.projectName);
    if (!project) throw new CommandError(`project ${client.projectName} not found`);
    filters.within_projects = [project.project_id];
  }
  if (options.includeTargetType)
    filters.include_target_types = options.includeTargetType as EventFilters['include_target_types'];
  return filters;
}

/** Every event after `since`, oldest first, a page at a time. */
async function* eventsSince(
  client: DstackApiClient,
  filters: EventFilters,
  since: Date,
  request?: RequestOptions,
): AsyncGenerator<Event> {
  let prevRecordedAt = since.toISOString();
  let prevId: string | null = null;
  for (;;) {
    const page = await client.listEvents(
      {
        ...filters,
        prev_recorded_at: prevRecordedAt,
        prev_id: prevId,
        limit: LIST_EVENTS_DEFAULT_LIMIT,
        ascending: true,
      },
      request,
    );
    yield* page;
    const last = page.at(-1);
    if (page.length < LIST_EVENTS_DEFAULT_LIMIT || !last) return;
    prevRecordedAt = last.recorded_at;
    prevId = last.id;
  }
}

/** The latest page, oldest first (what `dstack event` shows without `--since`). */
async function latestEvents(
  client: DstackApiClient,
  filters: EventFilters,
  request?: RequestOptions,
): Promise<Event[]> {
  return (await client.listEvents({ ...filters, ascending: false }, request)).reverse();
}

/**
 * `-w`: prints new events as they come. Each poll reads again from a little before the latest
 * event seen (events may be committed after their `recorded_at`), skipping those printed already.
 */
async function watchEvents(
  client: DstackApiClient,
  filters: EventFilters,
  since: Date | null,
  print: (event: Event) => void,
  signal: AbortSignal,
): Promise<void> {
  const seen = new Map<string, number>();
  let latest: number | null = null;
  for (;;) {
    const batch: AsyncIterable<Event> | Event[] =
      since === null && latest === null
        ? await latestEvents(client, filters, { signal })
        : eventsSince(
            client,
            filters,
            new Date(Math.max(since?.getTime() ?? 0, (latest ?? 0) - EVENT_DELAY_TOLERANCE_MS)),
            { signal },
          );
    for await (const event of batch) {
      const recordedAt = Date.parse(event.recorded_at);
      if (!seen.has(event.id)) {
        seen.set(event.id, recordedAt);
        print(event);
      }
      latest = Math.max(latest ?? recordedAt, recordedAt);
    }
    // Forget what is now out of the window: it is never read again.
    if (latest !== null) {
      for (const [id, recordedAt] of seen)
        if (recordedAt < latest - 2 * EVENT_DELAY_TOLERANCE_MS) seen.delete(id);
    }
    await sleep(WATCH_INTERVAL_MS, undefined, { signal });
  }
}

const TARGET_TYPES: readonly string[] = EventTargetTypeSchema.options;

/** `dstack event [list]`. */
export async function eventCommand(
  action: string | undefined,
  options: EventOptions,
  io: CliIo,
): Promise<number> {
  if (action !== undefined && action !== 'list')
    throw new CommandError(`unknown action '${action}' (expected: list)`);
  const unknownType = options.includeTargetType?.find((type) => !TARGET_TYPES.includes(type));
  if (unknownType !== undefined) {
    throw new CommandError(
      `--include-target-type: '${unknownType}' is not one of ${TARGET_TYPES.join(', ')}`,
    );
  }
  const client = await connect(options, io);
  const since = options.since === undefined ? null : parseSince(options.since);
  const filters = await buildFilters(client, options);
  const colors = createColors(Boolean(io.stdoutColors));
  const print = (event: Event) => io.stdout(`${formatEvent(event, client.projectName, colors)}\n`);
  if (options.watch) {
    const interrupt = abortOnInterrupt();
    try {
      await watchEvents(client, filters, since, print, interrupt.signal);
    } catch (error) {
      // Ctrl-C ends the watch; whatever was in flight fails with an abort error.
      if (!interrupt.signal.aborted) throw error;
    } finally {
      interrupt.dispose();
    }
    return 0;
  }
  const events = since === null ? await latestEvents(client, filters) : eventsSince(client, filters, since);
  for await (const event of events) print(event);
  return 0;
}
