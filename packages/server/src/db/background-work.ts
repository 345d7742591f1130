/**
 * Keeps the API responsive while background work (the pipelines) runs on SQLite.
 *
 * better-sqlite3 is synchronous, so Kysely's queries on it resolve as microtasks: a pipeline
 * pass that makes twenty queries, and a hundred such passes started at once, run as one long
 * turn of the event loop, and an API request waits for the whole of it. Here background work
 * gives the event loop back (setImmediate) before a query once the current turn has run for
 * `TURN_BUDGET_MS`: requests are read and answered between the pieces. Requests themselves never
 * wait here, and neither does a query inside a transaction (it holds the one connection).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { type DatabaseConnection, type Driver, SqliteDialect } from 'kysely';

/** How long background work may keep the event loop before it lets requests in. */
export const TURN_BUDGET_MS = 5;

const background = new AsyncLocalStorage<true>();

/** Runs `work` (and everything it starts) as background work, which yields to requests. */
export function asBackgroundWork<T>(work: () => T): T {
  return background.run(true, work);
}

/** When the current turn's background work began; undefined once the event loop has moved on. */
let turnStartedAt: number | undefined;

/** Background work waiting for a later turn, first come first served. */
const waiting: Array<() => void> = [];

/** Milliseconds of the current turn background work has had; starts the turn's budget when new. */
function turnElapsedMs(): number {
  const now = performance.now();
  if (turnStartedAt === undefined) {
    turnStartedAt = now;
    // Runs once this turn's work is over (the check phase, after I/O): a new turn, a new budget.
    setImmediate(() => {
      turnStartedAt = undefined;
    });
  }
  return now - turnStartedAt;
}

/**
 * One per waiting piece of work (an immediate): resumes the first waiting one when the turn has
 * budget left, else waits for the next turn, so that requests are read in between. Node drains
 * the microtasks after each immediate, so the piece resumed here has run up to its next wait
 * before the next immediate looks at the clock: a turn resumes about `TURN_BUDGET_MS` of work,
 * not every piece that yielded in the turn before.
 */
function resumeNext(): void {
  if (turnElapsedMs() >= TURN_BUDGET_MS) {
    setImmediate(resumeNext);
    return;
  }
  waiting.shift()?.();
}

/**
 * Resolves at once, or on a later turn of the event loop when background work has had the
 * current one for `TURN_BUDGET_MS`. Outside background work it never waits.
 */
export function yieldToRequests(): Promise<void> | undefined {
  if (background.getStore() === undefined) return undefined;
  if (waiting.length === 0 && turnElapsedMs() < TURN_BUDGET_MS) return undefined;
  return new Promise((resolve) => {
    waiting.push(resolve);
    setImmediate(resumeNext);
  });
}

/** Kysely's SQLite dialect whose queries, made by background work, yield to requests first. */
export class YieldingSqliteDialect extends SqliteDialect {
  override createDriver(): Driver {
    const driver = super.createDriver();
    // A query outside a transaction, or a transaction's start, acquires the one connection:
    // waiting there never holds it.
    const acquireConnection = async (): Promise<DatabaseConnection> => {
      await yieldToRequests();
      return driver.acquireConnection();
    };
    return new Proxy(driver, {
      get(target, key, receiver) {
        if (key === 'acquireConnection') return acquireConnection;
        const value = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }
}
