import type { LogEvent } from '@dstack/core';
import type { CliIo } from '../io.js';
import type { DstackApiClient, PollLogsRequest, RequestOptions } from './client.js';

/** Events per `logs/poll` request (the API's maximum). */
const PAGE_SIZE = 1000;

function eventKey(event: LogEvent): string {
  return `${event.log_source}\u0000${event.message}`;
}

/**
 * Reads a run's logs in order, each event once, across repeated polls. It follows the
 * server's `next_token` when one is given, else restarts from the last timestamp seen; events
 * at that timestamp that were already returned are skipped, so it works whether the server
 * treats `start_time` as inclusive or exclusive.
 */
export class LogReader {
  readonly #client: DstackApiClient;
  readonly #runName: string;
  #nextToken: string | undefined;
  #lastTimestamp: string | undefined;
  /** Keys (with multiplicity) of the events already returned at `#lastTimestamp`. */
  #seenAtLastTimestamp = new Map<string, number>();
  /** For the page being read: how many repeats of each seen event an inclusive server may send. */
  #repeatsToSkip = new Map<string, number>();

  constructor(client: DstackApiClient, runName: string) {
    this.#client = client;
    this.#runName = runName;
  }

  /** Everything logged since the previous call (all pages). */
  async readNew(options: RequestOptions = {}): Promise<LogEvent[]> {
    const events: LogEvent[] = [];
    for (;;) {
      const body: PollLogsRequest = { run_name: this.#runName, limit: PAGE_SIZE, descending: false };
      if (this.#nextToken) body.next_token = this.#nextToken;
      else if (this.#lastTimestamp) body.start_time = this.#lastTimestamp;
      const page = await this.#client.pollLogs(body, options);
      const followingToken = body.next_token !== undefined;
      this.#repeatsToSkip = new Map(this.#seenAtLastTimestamp);
      const fresh = page.logs.filter((event) => this.#accept(event, followingToken));
      events.push(...fresh);
      // This server's `cursor` resumes after the rows returned, also after the last page. Without
      // it (dstack's servers), a null `next_token` ends the pages: the token before it would read
      // that last page again, so the next poll starts from the last timestamp.
      this.#nextToken = page.cursor ?? page.next_token ?? undefined;
      const pageWasFull = page.logs.length >= PAGE_SIZE;
      const mayHaveMore = pageWasFull || (Boolean(page.next_token) && page.logs.length > 0);
      if (!mayHaveMore) return events;
    }
  }

  /** Whether `event` is new; with a `next_token` the server already guarantees that. */
  #accept(event: LogEvent, followingToken: boolean): boolean {
    const key = eventKey(event);
    const order =
      this.#lastTimestamp === undefined ? 1 : Date.parse(event.timestamp) - Date.parse(this.#lastTimestamp);
    if (!followingToken && order < 0) return false;
    if (!followingToken && order === 0) {
      const repeats = this.#repeatsToSkip.get(key) ?? 0;
      if (repeats > 0) {
        this.#repeatsToSkip.set(key, repeats - 1);
        return false;
      }
    }
    if (order !== 0) this.#seenAtLastTimestamp = new Map();
    this.#lastTimestamp = event.timestamp;
    this.#seenAtLastTimestamp.set(key, (this.#seenAtLastTimestamp.get(key) ?? 0) + 1);
    return true;
  }
}

/**
 * Writes decoded log events to stdout or stderr by their source (the runner's own messages go
 * to stderr). Decoders are kept per stream so that a character split across events survives.
 */
export class LogWriter {
  readonly #io: CliIo;
  readonly #decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };

  constructor(io: CliIo) {
    this.#io = io;
  }

  write(events: readonly LogEvent[]): void {
    for (const event of events) {
      const stream = event.log_source === 'stdout' ? 'stdout' : 'stderr';
      const text = this.#decoders[stream].decode(Buffer.from(event.message, 'base64'), { stream: true });
      if (text !== '') this.#io[stream](text);
    }
  }
}
