/**
 * Group commit of the pipelines' releases on SQLite.
 *
 * Every status change a pass makes is stored with its events in a transaction of its own, and a
 * commit writes every page the transaction touched to the log: a run of 500 at once made about
 * 14 commits per run, and each wrote the same few hot pages again (the pipelines' indexes, the
 * events' indexes). SQLite has one connection, so those transactions ran one after the other
 * anyway. Here the releases asked for in one turn of the event loop are applied in one
 * transaction, each inside a savepoint of its own: one that fails (a release whose claim was
 * lost, a `releaseWith` refused by its other writes) is undone alone and its caller gets its own
 * outcome, as with a transaction of its own. Nothing is committed to a caller before the group
 * is. The events of the releases that were stored are inserted at the group's end, one statement
 * per table instead of two per event.
 *
 * On Postgres each release keeps its own transaction: the pool runs them side by side, and a
 * group holding several rows' locks would make replicas wait on (or deadlock with) each other.
 */
import { type Kysely, sql, type Transaction } from 'kysely';
import type { SqlDialect } from '../context.js';
import type { Database } from '../db/schema.js';
import {
  deferEvents,
  type EventRows,
  insertEventRows,
  stopDeferringEvents,
} from '../events/event-recorder.js';

type Work = (transaction: Transaction<Database>) => Promise<unknown>;

/**
 * A release's writes: several, or one statement (SQLite undoes a failed statement by itself, so it
 * needs no savepoint, and alone in a turn it needs no transaction).
 */
type Release<T> =
  | { singleStatement: false; work: (transaction: Transaction<Database>) => Promise<T> }
  | { singleStatement: true; work: (db: Kysely<Database>) => Promise<T> };

type Pending = Release<unknown> & {
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
};

/** Releases per transaction: enough to share the commit, few enough not to hold the connection long. */
const MAX_GROUP = 64;

class ReleaseGroups {
  readonly #db: Kysely<Database>;
  #queue: Pending[] = [];
  #flushing = false;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  run<T>(work: Release<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ ...work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#flushing) {
        this.#flushing = true;
        // The other releases of this turn join the group.
        setImmediate(() => void this.#flush());
      }
    });
  }

  async #flush(): Promise<void> {
    while (this.#queue.length > 0) {
      const group = this.#queue.splice(0, MAX_GROUP);
      const [only] = group;
      if (group.length === 1 && only?.singleStatement) {
        // One statement alone is its own transaction: no BEGIN and COMMIT around it.
        await only.work(this.#db).then(only.resolve, only.reject);
        continue;
      }
      const outcomes: Array<{ value: unknown } | { error: unknown }> = [];
      try {
        await this.#db.transaction().execute(async (transaction) => {
          // The events of the releases that were stored go in at the end, one insert per table.
          const events: EventRows = { events: [], targets: [] };
          for (const item of group) {
            const own: EventRows = { events: [], targets: [] };
            deferEvents(transaction, own);
            const outcome = item.singleStatement
              ? await Promise.resolve(transaction)
                  .then(item.work)
                  .then(
                    (value) => ({ value }),
                    (error: unknown) => ({ error }),
                  )
              : await inSavepoint(transaction, item.work);
            stopDeferringEvents(transaction);
            if ('value' in outcome) {
              events.events.push(...own.events);
              events.targets.push(...own.targets);
            }
            outcomes.push(outcome);
          }
          await insertEventRows(transaction, events);
        });
      } catch (error) {
        // The commit itself failed: nothing of the group was stored.
        for (const item of group) item.reject(error);
        continue;
      }
      group.forEach((item, index) => {
        const outcome = outcomes[index] as { value: unknown } | { error: unknown };
        if ('error' in outcome) item.reject(outcome.error);
        else item.resolve(outcome.value);
      });
      // Let the callers (and the API) run before the next group.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    this.#flushing = false;
  }
}

/** Runs `work` inside a savepoint, undoing only its writes when it throws. */
async function inSavepoint(
  transaction: Transaction<Database>,
  work: Work,
): Promise<{ value: unknown } | { error: unknown }> {
  await sql`SAVEPOINT pipeline_release`.execute(transaction);
  try {
    const value = await work(transaction);
    await sql`RELEASE SAVEPOINT pipeline_release`.execute(transaction);
    return { value };
  } catch (error) {
    await sql`ROLLBACK TO SAVEPOINT pipeline_release`.execute(transaction);
    await sql`RELEASE SAVEPOINT pipeline_release`.execute(transaction);
    return { error };
  }
}

const groupsByDatabase = new WeakMap<Kysely<Database>, ReleaseGroups>();

/**
 * Runs `work` in a transaction: on SQLite in the group of this turn's releases (inside a
 * savepoint of its own), on Postgres in a transaction of its own. Resolves once it is committed;
 * rejects with what `work` threw, its writes undone.
 */
export function inReleaseTransaction<T>(
  db: Kysely<Database>,
  dialect: SqlDialect,
  work: (transaction: Transaction<Database>) => Promise<T>,
): Promise<T> {
  if (dialect === 'postgres') return db.transaction().execute(work);
  return groupOf(db).run({ singleStatement: false, work });
}

/**
 * Runs one write statement (`write` makes exactly one): on SQLite in the group of this turn's
 * releases, on Postgres on its own, without a transaction.
 */
export function inReleaseGroup<T>(
  db: Kysely<Database>,
  dialect: SqlDialect,
  write: (db: Kysely<Database>) => Promise<T>,
): Promise<T> {
  if (dialect === 'postgres') return write(db);
  return groupOf(db).run({ singleStatement: true, work: write });
}

function groupOf(db: Kysely<Database>): ReleaseGroups {
  let groups = groupsByDatabase.get(db);
  if (!groups) {
    groups = new ReleaseGroups(db);
    groupsByDatabase.set(db, groups);
  }
  return groups;
}
