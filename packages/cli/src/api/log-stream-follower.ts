import { setTimeout as sleep } from 'node:timers/promises';
import type { LogEvent } from '@dstack/core';
import { InvalidTokenError, ServerApiError, UnexpectedResponseError } from './api-errors.js';
import type { DstackApiClient } from './client.js';
import type { LogStreamLines } from './log-stream-lines.js';

/** Reopen attempts in a row (without a line received in between) before a broken stream fails. */
const MAX_RECONNECTS = 5;

export interface LogStreamFollowerOptions {
  /** Stops following (Ctrl-C): the pending read fails with an abort error. */
  signal?: AbortSignal;
  /** Milliseconds before a broken stream is reopened from the last cursor. Default 1 000. */
  reconnectDelayMs?: number;
}

/** Whether `error` says the server has no `logs/stream` (an older server), rather than no such run. */
function isMissingEndpoint(error: unknown): boolean {
  return (
    ServerApiError.isInstance(error) &&
    error.statusCode === 404 &&
    !error.details.some((detail) => detail.code === 'resource_not_exists')
  );
}

/** Whether reopening the stream may help: anything but an answer saying the request itself is wrong. */
function isRetryable(error: unknown): boolean {
  if (InvalidTokenError.isInstance(error) || UnexpectedResponseError.isInstance(error)) return false;
  if (ServerApiError.isInstance(error)) return error.statusCode >= 500;
  return true;
}

/**
 * Follows a run's logs through the server's `logs/stream` until the run is finished and every
 * event was delivered. A broken connection (or a server restart) is reopened from the last
 * `next_token`, so nothing is lost or repeated.
 */
export class LogStreamFollower {
  readonly #client: DstackApiClient;
  readonly #runName: string;
  readonly #signal: AbortSignal | undefined;
  readonly #reconnectDelayMs: number;
  #lines: LogStreamLines | null;
  #nextToken: string | null = null;
  /** Why the first open failed, when `follow` must open the stream itself. */
  readonly #openError: unknown;

  private constructor(
    client: DstackApiClient,
    runName: string,
    opened: { lines: LogStreamLines } | { error: unknown },
    options: LogStreamFollowerOptions,
  ) {
    this.#client = client;
    this.#runName = runName;
    this.#lines = 'lines' in opened ? opened.lines : null;
    this.#openError = 'error' in opened ? opened.error : undefined;
    this.#signal = options.signal;
    this.#reconnectDelayMs = options.reconnectDelayMs ?? 1_000;
  }

  /**
   * Opens the stream; null when the server has no `logs/stream` (then poll with `LogReader`).
   * A failure that reopening may cure (a restarting server, a reset) is left to `follow`, which
   * retries as it does for a broken stream.
   */
  static async open(
    client: DstackApiClient,
    runName: string,
    options: LogStreamFollowerOptions = {},
  ): Promise<LogStreamFollower | null> {
    try {
      const lines = await client.streamLogs({ run_name: runName }, { signal: options.signal });
      return new LogStreamFollower(client, runName, { lines }, options);
    } catch (error) {
      if (isMissingEndpoint(error)) return null;
      if (options.signal?.aborted || !isRetryable(error)) throw error;
      return new LogStreamFollower(client, runName, { error }, options);
    }
  }

  /** Calls `onEvent` for each log event, in order, until the run is finished and all were delivered. */
  async follow(onEvent: (event: LogEvent) => void): Promise<void> {
    let failures = 0;
    let lastError: unknown = this.#openError;
    for (;;) {
      if (this.#lines) {
        lastError = new UnexpectedResponseError(
          `the log stream of ${this.#runName} ended without its end line`,
        );
        try {
          for await (const line of this.#lines) {
            failures = 0;
            if ('end' in line) {
              if (line.end === 'run_finished') return;
              // server_stopping: another replica, or this one restarted, serves the rest.
              break;
            }
            if (line.next_token !== null) this.#nextToken = line.next_token;
            if ('message' in line) {
              onEvent({ timestamp: line.timestamp, log_source: line.log_source, message: line.message });
            }
          }
        } catch (error) {
          if (this.#signal?.aborted || !isRetryable(error)) throw error;
          lastError = error;
        }
        this.#lines = null;
      }
      failures += 1;
      if (failures > MAX_RECONNECTS) throw lastError;
      await sleep(this.#reconnectDelayMs, undefined, { signal: this.#signal });
      try {
        this.#lines = await this.#client.streamLogs(
          { run_name: this.#runName, ...(this.#nextToken === null ? {} : { next_token: this.#nextToken }) },
          { signal: this.#signal },
        );
      } catch (error) {
        if (this.#signal?.aborted || !isRetryable(error)) throw error;
        lastError = error;
      }
    }
  }
}
