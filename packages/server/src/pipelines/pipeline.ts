/**
 * One pipeline of dstack's newer background design (contributing/PIPELINES.md):
 * a fetcher claims due rows by setting their lock columns, workers process each
 * claimed row outside any transaction, and every write of a result is guarded
 * by `id + lock_token`, so a row is never processed by two servers at once.
 *
 * A row is due when it is in one of the pipeline's statuses, unlocked (or its
 * lock expired) and `last_processed_at <= now - minIntervalMs`. Services make a
 * row due at once by setting `last_processed_at = 0` and waking the pipeline
 * (see `markRunDue` in rows.ts); a row marked so while it is being processed
 * stays due after its release, and its pipeline fetches it again at once, so
 * no wake-up is lost.
 *
 * A row's processing is bounded (`processTimeoutMs`): past it the worker moves on to other
 * rows, the claim is given back so the row is retried, and whatever the late processing
 * releases is dropped, so an agent or a backend that never answers cannot hold a worker.
 */
import { randomUUID } from 'node:crypto';
import {
  type Kysely,
  type RawBuilder,
  type SelectQueryBuilder,
  sql,
  type Transaction,
  type UpdateObject,
} from 'kysely';
import type { AppContext } from '../context.js';
import type { Database } from '../db/schema.js';
import { recordEvents } from '../events/event-recorder.js';
import { mayBeEventful, rowChangeEvents, STATUS_EVENT_COLUMNS } from '../events/status-events.js';
import { inReleaseGroup, inReleaseTransaction } from './release-groups.js';
import type { PipelineName, WakeUps } from './wake-ups.js';

export type PipelineTable = 'runs' | 'jobs' | 'instances' | 'fleets' | 'volumes' | 'gateways';

/** A row of a pipeline's table, as its pipeline claims it. */
export type PipelineRow<Table extends PipelineTable> = Database[Table];

/** The columns a pass may write when it releases a row of `Table` (the lock columns are the engine's). */
export type RowUpdate<Table extends PipelineTable> = Omit<
  UpdateObject<Database, Table>,
  'id' | 'lock_token' | 'lock_owner' | 'lock_expires_at'
>;

/** One claim: the lock it sets, on the due rows (`due` selects their ids) still unlocked. */
interface Claim {
  db: Kysely<Database>;
  lock: { lock_token: string; lock_owner: string; lock_expires_at: number; last_processed_at: number };
  due: SelectQueryBuilder<Database, PipelineTable, { id: string }>;
  lockFree: RawBuilder<boolean>;
}

/**
 * The claim statement of each table, written out per table so that Kysely types the rows each
 * returns (a statement on a table chosen by a type parameter returns a merge of every table's row).
 */
const CLAIMS: { [Table in PipelineTable]: (claim: Claim) => Promise<PipelineRow<Table>[]> } = {
  runs: ({ db, lock, due, lockFree }) =>
    db.updateTable('runs').set(lock).where('id', 'in', due).where(lockFree).returningAll().execute(),
  jobs: ({ db, lock, due, lockFree }) =>
    db.updateTable('jobs').set(lock).where('id', 'in', due).where(lockFree).returningAll().execute(),
  instances: ({ db, lock, due, lockFree }) =>
    db.updateTable('instances').set(lock).where('id', 'in', due).where(lockFree).returningAll().execute(),
  fleets: ({ db, lock, due, lockFree }) =>
    db.updateTable('fleets').set(lock).where('id', 'in', due).where(lockFree).returningAll().execute(),
  volumes: ({ db, lock, due, lockFree }) =>
    db.updateTable('volumes').set(lock).where('id', 'in', due).where(lockFree).returningAll().execute(),
  gateways: ({ db, lock, due, lockFree }) =>
    db.updateTable('gateways').set(lock).where('id', 'in', due).where(lockFree).returningAll().execute(),
};

export interface PipelineDefinition<Table extends PipelineTable> {
  name: PipelineName;
  table: Table;
  statuses: readonly PipelineRow<Table>['status'][];
  /** How often an unchanged row is processed again. */
  minIntervalMs: number;
  /** How many rows are processed at the same time. */
  workers: number;
  /** How long a claim lasts without a heartbeat. */
  lockMs?: number;
  /**
   * How long one row's processing may take. Past it, `lock.signal` aborts, the worker is freed,
   * the row is released (so it is retried) and the late processing's release is dropped.
   * Default 5 minutes; keep it above the deadlines of the calls one pass makes.
   */
  processTimeoutMs?: number;
  /**
   * Claim only rows with `deleted = 0`: for a table whose rows have no final status to leave
   * the pipeline's statuses by (volumes keep theirs once deleted). Default false.
   */
  undeletedOnly?: boolean;
  process(row: PipelineRow<Table>, lock: RowLock<Table>): Promise<void>;
}

/** Any pipeline's definition: what start-up and the tests list, whatever each one's table. */
export type AnyPipelineDefinition = { [Table in PipelineTable]: PipelineDefinition<Table> }[PipelineTable];

/** The claim on one row of `Table`: writes through it succeed only while the claim holds. */
export interface RowLock<Table extends PipelineTable> {
  readonly token: string;
  /**
   * Applies `values` to the row and releases it, when the claim still holds.
   * Returns false when another process took the row over (the result is dropped).
   */
  release(values?: RowUpdate<Table>): Promise<boolean>;
  /**
   * Like `release`, in one transaction with `alongside`: the writes to other rows that make one
   * result with this row's (a job's placement and the blocks it takes of its instance), so that
   * both are stored or neither. `alongside` runs first; when it returns false nothing is written
   * and the row stays claimed (`refused`). When the claim no longer holds, the writes of
   * `alongside` are undone too (`lost`).
   */
  releaseWith(
    alongside: (transaction: Transaction<Database>) => Promise<boolean>,
    values?: RowUpdate<Table>,
  ): Promise<ReleaseOutcome>;
  /** Aborts when the processing is given up (`processTimeoutMs`): pass it to slow calls so they stop too. */
  readonly signal: AbortSignal;
}

export type ReleaseOutcome = 'released' | 'refused' | 'lost';

/** Thrown inside `releaseWith`'s transaction to roll it back with this outcome. */
class RolledBack extends Error {
  constructor(readonly outcome: Exclude<ReleaseOutcome, 'released'>) {
    super(`release ${outcome}`);
  }
}

const DEFAULT_LOCK_MS = 30_000;
const DEFAULT_PROCESS_TIMEOUT_MS = 300_000;
/** How often the fetcher looks for due rows when nothing wakes it. */
const FETCH_TICK_MS = 1_000;

export class Pipeline<Table extends PipelineTable> {
  readonly #app: AppContext;
  readonly #definition: PipelineDefinition<Table>;
  /** Rows being processed, by `id:token` (a row may be claimed again before its finally runs). */
  readonly #inFlight = new Map<string, { id: string; work: Promise<void> }>();
  #stopped = false;
  /** Something may have become due since the last claim (a wake-up, a due timer, a row released due). */
  #dueSignalled = false;
  /** The last claim filled every free worker: more rows may be waiting for one. */
  #backlog = false;
  #wakeFetcher: (() => void) | null = null;
  #loop: Promise<void> | null = null;
  #unsubscribe: (() => void) | null = null;
  #heartbeat: NodeJS.Timeout | null = null;
  #passes = 0;

  /**
   * `app` is what the pipeline and its passes query through: the server gives the background
   * context (`backgroundContextOf`), whose queries yield the event loop to requests'.
   */
  constructor(app: AppContext, definition: PipelineDefinition<Table>) {
    this.#app = app;
    this.#definition = definition;
  }

  get name(): PipelineName {
    return this.#definition.name;
  }

  /** Rows processed since the pipeline was made: one per pass over a row (what a run costs is counted in them). */
  get passes(): number {
    return this.#passes;
  }

  /** The table, for Kysely's builders (they take the union of tables, not a type parameter). */
  get #table(): PipelineTable {
    return this.#definition.table;
  }

  start(wakeUps: WakeUps): void {
    this.#unsubscribe = wakeUps.subscribe(this.#definition.name, () => this.#signalDue());
    const lockMs = this.#definition.lockMs ?? DEFAULT_LOCK_MS;
    this.#heartbeat = setInterval(() => void this.#extendLocks(lockMs), lockMs / 3);
    this.#heartbeat.unref();
    this.#loop = this.#run();
  }

  /** Stops fetching, waits for rows in flight, and releases nothing else (their results are applied). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe?.();
    this.#signalDue();
    await this.#loop;
    await Promise.allSettled([...this.#inFlight.values()].map((entry) => entry.work));
    if (this.#heartbeat) clearInterval(this.#heartbeat);
  }

  /**
   * Claims the rows due now (up to `workers`) and processes them, resolving once they are done;
   * returns how many there were. For tests and tools that step a pipeline by hand instead of
   * `start`ing it.
   */
  async processDue(): Promise<number> {
    const rows = await this.#claim(this.#definition.workers - this.#inFlight.size);
    const keys = rows.map((row) => `${row.id}:${row.lock_token}`);
    for (const row of rows) this.#dispatch(row);
    await Promise.all(keys.map((key) => this.#inFlight.get(key)?.work));
    return rows.length;
  }

  #signalDue(): void {
    this.#dueSignalled = true;
    this.#wakeFetcher?.();
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      // Let the signals of this turn of the event loop (several wake-ups, several workers
      // finishing) gather, so that one claim serves them all.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (this.#stopped) break;
      this.#dueSignalled = false;
      const free = this.#definition.workers - this.#inFlight.size;
      if (free > 0) {
        try {
          const rows = await this.#claim(free);
          for (const row of rows) this.#dispatch(row);
          this.#backlog = rows.length === free;
        } catch (error) {
          if (!this.#stopped) console.error(`[pipeline ${this.name}] fetch failed:`, error);
        }
      }
      if (this.#stopped) break;
      if (this.#dueSignalled && this.#inFlight.size < this.#definition.workers) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, FETCH_TICK_MS);
        this.#wakeFetcher = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wakeFetcher = null;
    }
  }

  #dispatch(row: PipelineRow<Table>): void {
    this.#passes += 1;
    const token = row.lock_token as string;
    const key = `${row.id}:${token}`;
    const timeoutMs = this.#definition.processTimeoutMs ?? DEFAULT_PROCESS_TIMEOUT_MS;
    const giveUp = new AbortController();
    let released = false;
    const lock: RowLock<Table> = {
      token,
      signal: giveUp.signal,
      release: (values) => {
        // Given up: the row was released and may be claimed again; this late result is dropped.
        if (giveUp.signal.aborted) return Promise.resolve(false);
        released = true;
        return this.#release(row.id, token, values, mayBeEventful(row, values) ? row : null);
      },
      releaseWith: async (alongside, values) => {
        if (giveUp.signal.aborted) return 'lost';
        const outcome = await this.#releaseWith(
          row.id,
          token,
          alongside,
          values,
          mayBeEventful(row, values) ? row : null,
        );
        if (outcome === 'released') released = true;
        return outcome;
      },
    };
    const work = (async () => {
      let timer: NodeJS.Timeout | undefined;
      const processing = (async () => this.#definition.process(row, lock))();
      const deadline = new Promise<'timed-out'>((resolve) => {
        timer = setTimeout(() => resolve('timed-out'), timeoutMs);
      });
      try {
        if ((await Promise.race([processing, deadline])) === 'timed-out') {
          giveUp.abort(new Error(`processing took longer than ${timeoutMs} ms`));
          console.error(
            `[pipeline ${this.name}] processing ${row.id} took longer than ${timeoutMs} ms: given up, the row will be retried`,
          );
          processing.catch((error: unknown) => {
            console.error(`[pipeline ${this.name}] given-up processing of ${row.id} failed:`, error);
          });
        }
      } catch (error) {
        console.error(`[pipeline ${this.name}] processing ${row.id} failed:`, error);
      } finally {
        clearTimeout(timer);
        // Whatever happened, give the row back, unless process did.
        if (!released) await this.#release(row.id, token).catch(() => {});
        this.#inFlight.delete(key);
        // A freed worker looks for more only when the last claim left rows waiting, or rows
        // became due while every worker was busy.
        if (this.#backlog || this.#dueSignalled) this.#signalDue();
      }
    })();
    this.#inFlight.set(key, { id: row.id, work });
  }

  /** Claims up to `limit` due rows in one statement (atomic on SQLite; SKIP LOCKED on Postgres). */
  async #claim(limit: number): Promise<PipelineRow<Table>[]> {
    const { db, dialect, serverId } = this.#app;
    const { statuses, minIntervalMs } = this.#definition;
    const table = this.#table;
    const now = Date.now();
    const token = randomUUID();
    const lockMs = this.#definition.lockMs ?? DEFAULT_LOCK_MS;
    const lockFree = unclaimedAt(now);
    let due = db
      .selectFrom(table)
      .select('id')
      .where('status', 'in', [...statuses])
      .where(lockFree)
      .where('last_processed_at', '<=', now - minIntervalMs)
      .orderBy('last_processed_at')
      .limit(limit);
    if (this.#definition.undeletedOnly) due = due.where(sql<boolean>`deleted = 0`);
    if (dialect === 'postgres') due = due.forUpdate().skipLocked();
    const claim: Claim = {
      db,
      lock: {
        lock_token: token,
        lock_owner: serverId,
        lock_expires_at: now + lockMs,
        last_processed_at: now,
      },
      due,
      lockFree,
    };
    return CLAIMS[this.#definition.table](claim);
  }

  async #release(
    id: string,
    token: string,
    values: Record<string, unknown> = {},
    claimed: PipelineRow<Table> | null = null,
  ): Promise<boolean> {
    const { db, dialect } = this.#app;
    // A status change and its event are stored together; a release that lost its claim records
    // nothing. On SQLite the releases of one turn share a commit (release-groups.ts).
    const released = claimed
      ? await inReleaseTransaction(db, dialect, (transaction) =>
          this.#releaseChangingStatus(transaction, claimed, token, values),
        )
      : await inReleaseGroup(db, dialect, (db) => this.#releaseRow(db, id, token, values));
    if (released) this.#afterRelease(released.last_processed_at);
    return released !== undefined;
  }

  /**
   * Releases the row with a new status (or reachability) and records its events (the system
   * acted), worded from the row as it was just before (a pass may have moved it on its way: a
   * volume marked provisioning before the provider call) and the status it got (which may be a
   * SQL expression's result). Only the columns the events read are read again (a job's or a run's
   * spec is kilobytes the events do not use); the rest are the claimed row's.
   */
  async #releaseChangingStatus(
    transaction: Kysely<Database>,
    claimed: PipelineRow<Table>,
    token: string,
    values: Record<string, unknown>,
  ): Promise<{ last_processed_at: unknown } | undefined> {
    const current = await transaction
      .selectFrom(this.#table)
      .select(STATUS_EVENT_COLUMNS[this.#table] as never)
      .where('id', '=', claimed.id)
      .where('lock_token', '=', token)
      .executeTakeFirst();
    const row = await this.#releaseRow(transaction, claimed.id, token, values);
    if (!current || !row) return row;
    const before = { ...claimed, ...(current as Record<string, unknown>) } as PipelineRow<PipelineTable>;
    const events = rowChangeEvents(this.#table, before, {
      ...values,
      status: row.status,
    } as never);
    await recordEvents(transaction, this.#app.settings.events, events);
    return row;
  }

  async #releaseWith(
    id: string,
    token: string,
    alongside: (transaction: Transaction<Database>) => Promise<boolean>,
    values: Record<string, unknown> = {},
    claimed: PipelineRow<Table> | null = null,
  ): Promise<ReleaseOutcome> {
    let released: { last_processed_at: unknown };
    try {
      released = await inReleaseTransaction(this.#app.db, this.#app.dialect, async (transaction) => {
        if (!(await alongside(transaction))) throw new RolledBack('refused');
        const row = claimed
          ? await this.#releaseChangingStatus(transaction, claimed, token, values)
          : await this.#releaseRow(transaction, id, token, values);
        if (!row) throw new RolledBack('lost');
        return row;
      });
    } catch (error) {
      if (error instanceof RolledBack) return error.outcome;
      throw error;
    }
    this.#afterRelease(released.last_processed_at);
    return 'released';
  }

  /** Applies `values` to the row and clears its claim, when `token` still holds it. */
  #releaseRow(
    db: Kysely<Database>,
    id: string,
    token: string,
    values: Record<string, unknown>,
  ): Promise<{ last_processed_at: unknown; status: string } | undefined> {
    const { last_processed_at: requested, ...rest } = values;
    const processedAt = typeof requested === 'number' ? requested : Date.now();
    return db
      .updateTable(this.#table)
      .set({
        ...rest,
        last_processed_at: sql`CASE WHEN last_processed_at = 0 THEN last_processed_at ELSE CAST(${processedAt} AS BIGINT) END`,
        lock_token: null,
        lock_owner: null,
        lock_expires_at: null,
      } as never)
      .where('id', '=', id)
      .where('lock_token', '=', token)
      .returning(['last_processed_at', 'status'])
      .executeTakeFirst();
  }

  /**
   * A row marked due while it was processed (or released due) is fetched at once; one released
   * to be looked at again soon (polling a starting agent) must not wait for the fetch tick.
   */
  #afterRelease(lastProcessedAt: unknown): void {
    if (this.#stopped) return;
    const dueAt = Number(lastProcessedAt) + this.#definition.minIntervalMs;
    const dueInMs = dueAt - Date.now();
    if (dueInMs <= 0) this.#signalDue();
    else if (dueInMs < FETCH_TICK_MS) setTimeout(() => this.#signalDue(), dueInMs).unref();
  }

  async #extendLocks(lockMs: number): Promise<void> {
    if (this.#inFlight.size === 0) return;
    await this.#app.db
      .updateTable(this.#table)
      .set({ lock_expires_at: Date.now() + lockMs } as never)
      .where(
        'id',
        'in',
        [...this.#inFlight.values()].map((entry) => entry.id),
      )
      .where('lock_owner', '=', this.#app.serverId)
      .execute()
      .catch(() => {});
  }
}

/**
 * The condition that a row is claimed by no pass at `now`: never claimed, released, or its claim
 * expired. Writes outside a pass that must not race one (a run following its job, a fleet's
 * placement) are guarded by it as the claim itself is.
 */
export function unclaimedAt(now: number): RawBuilder<boolean> {
  return sql<boolean>`(lock_expires_at IS NULL OR lock_expires_at < ${now})`;
}

/** `last_processed_at` that makes a row due again in `ms` (pipelines process rows older than their interval). */
export function dueIn(ms: number, minIntervalMs: number): number {
  return Date.now() - minIntervalMs + ms;
}

/**
 * Writes a user's decision (stop these runs, delete these fleets) to rows a pass may be processing.
 * The claims are cleared with it, so a pass in flight loses its release instead of overwriting the
 * decision with what it computed from the row as it read it. The rows are due at once.
 */
export async function overrideClaimedRows<Table extends PipelineTable>(
  db: Kysely<Database>,
  table: Table,
  ids: readonly string[],
  values: RowUpdate<Table>,
): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable(table as PipelineTable)
    .set({
      ...values,
      last_processed_at: 0,
      lock_token: null,
      lock_owner: null,
      lock_expires_at: null,
    } as never)
    .where('id', 'in', ids)
    .execute();
}
