/**
 * Keeps the API responsive while background work (the pipelines) runs on SQLite.
 *
 * better-sqlite3 is synchronous, so Kysely's queries on it resolve as microtasks: a pipeline
 * pass that makes twenty queries, and a hundred such passes started at once, run as one long
 * turn of the event loop, and an API request waits for the whole of it. Here work gives the event
 * loop back (setImmediate) before a query once the current turn has run for `TURN_BUDGET_MS`:
 * requests are read and answered between the pieces. Requests' own pieces wait too, but only once
 * requests have had the turn's budget, and only behind other requests' (they are resumed first;
 * a request arriving while the pipelines are busy still runs at once): a burst of applies ready in
 * one turn was handled whole in that turn, and a cheap request arriving meanwhile waited behind
 * all of it (its p99 read 160–300 ms during 500 applies from 50 clients). A query inside a
 * transaction never waits (it holds the one connection).
 *
 * Which work is which is told by the Kysely instance it queries through: the pipelines run with a
 * context whose `db` is the background handle (`backgroundContextOf`), both handles over the one
 * connection. (An AsyncLocalStorage marking the work cost every promise of the server a hook:
 * 12–15% of its CPU under the throughput bench, on Node 20.)
 */
import {
  type DatabaseConnection,
  type Dialect,
  type Driver,
  SqliteDialect,
  type SqliteDialectConfig,
} from 'kysely';

/** Whose a query is: a request's, or background work's (which yields to requests). */
export type WorkKind = 'request' | 'background';

/** How long background work may keep the event loop before it lets requests in. */
export const TURN_BUDGET_MS = 5;

/**
 * How long work has had the current turn of the event loop: started by the first piece that asks
 * in a turn, reset once the turn's work is over (an immediate, in the check phase after I/O).
 */
class TurnClock {
  #startedAt: number | undefined;

  elapsedMs(): number {
    const now = performance.now();
    if (this.#startedAt === undefined) {
      this.#startedAt = now;
      setImmediate(() => {
        this.#startedAt = undefined;
      });
    }
    return now - this.#startedAt;
  }
}

/** Any work's share of the turn: what background work is held to. */
const anyWork = new TurnClock();
/**
 * Requests' share of the turn: a request is held only to other requests' work, so a request
 * arriving while the pipelines are busy runs at once, as before; a burst of them is split.
 */
const requestWork = new TurnClock();

/** Requests' work waiting for a later turn, first come first served; resumed before background work. */
const waitingRequests: Array<() => void> = [];
/** Background work waiting for a later turn, first come first served. */
const waitingBackground: Array<() => void> = [];

/**
 * One per waiting piece of work (an immediate): resumes the first waiting one, a request's before
 * any background work's, when the turn has budget left, else waits for the next turn, so that new
 * requests are read in between. Node drains the microtasks after each immediate, so the piece
 * resumed here has run up to its next wait before the next immediate looks at the clock: a turn
 * resumes about `TURN_BUDGET_MS` of work, not every piece that yielded in the turn before.
 */
function resumeNext(): void {
  const requestsWaiting = waitingRequests.length > 0;
  const clock = requestsWaiting ? requestWork : anyWork;
  if (clock.elapsedMs() >= TURN_BUDGET_MS) {
    setImmediate(resumeNext);
    return;
  }
  (requestsWaiting ? waitingRequests.shift() : waitingBackground.shift())?.();
}

/**
 * Resolves at once, or on a later turn of the event loop when the current one has had
 * `TURN_BUDGET_MS` of work or work is waiting ahead. Background work counts every piece's time
 * and waits behind everything; a request counts and waits behind other requests' only.
 */
export function yieldToRequests(kind: WorkKind): Promise<void> | undefined {
  const isRequest = kind === 'request';
  // Every piece counts toward the turn background work is held to.
  const turnMs = anyWork.elapsedMs();
  const mayGoOn = isRequest
    ? waitingRequests.length === 0 && requestWork.elapsedMs() < TURN_BUDGET_MS
    : waitingRequests.length + waitingBackground.length === 0 && turnMs < TURN_BUDGET_MS;
  if (mayGoOn) return undefined;
  return new Promise((resolve) => {
    (isRequest ? waitingRequests : waitingBackground).push(resolve);
    setImmediate(resumeNext);
  });
}

/**
 * Kysely dialects over one SQLite connection whose queries yield the event loop, one per kind of
 * work: `dialectFor('request')` for the API's handle, `dialectFor('background')` for the
 * pipelines'. The connection is opened by the first handle used and closed by the first destroyed.
 */
export class YieldingSqliteConnection {
  readonly #dialect: SqliteDialect;
  readonly #driver: Driver;
  #initialized: Promise<void> | undefined;
  #destroyed: Promise<void> | undefined;

  constructor(config: SqliteDialectConfig) {
    this.#dialect = new SqliteDialect(config);
    this.#driver = this.#dialect.createDriver();
  }

  dialectFor(kind: WorkKind): Dialect {
    const dialect = this.#dialect;
    return {
      createDriver: () => this.#driverFor(kind),
      createQueryCompiler: () => dialect.createQueryCompiler(),
      createAdapter: () => dialect.createAdapter(),
      createIntrospector: (db) => dialect.createIntrospector(db),
    };
  }

  #driverFor(kind: WorkKind): Driver {
    const driver = this.#driver;
    const overrides: Partial<Driver> = {
      init: () => {
        this.#initialized ??= driver.init();
        return this.#initialized;
      },
      destroy: () => {
        this.#destroyed ??= driver.destroy();
        return this.#destroyed;
      },
      // A query outside a transaction, or a transaction's start, acquires the one connection:
      // waiting there never holds it.
      acquireConnection: async (): Promise<DatabaseConnection> => {
        await yieldToRequests(kind);
        return driver.acquireConnection();
      },
    };
    return new Proxy(driver, {
      get(target, key, receiver) {
        if (key in overrides) return overrides[key as keyof Driver];
        const value = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }
}
