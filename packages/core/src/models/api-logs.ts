/**
 * A job's logs as the server's HTTP API answers them: pages of `logs/poll`, lines of `logs/stream`.
 */
import * as z from 'zod';
import { DateTimeSchema } from './api-wire.js';
import { RunStatusSchema } from './statuses.js';

export const LogEventSchema = z.object({
  /** ISO 8601 with milliseconds. */
  timestamp: DateTimeSchema,
  log_source: z.enum(['stdout', 'stderr', 'runner']),
  /** Base64 of the bytes, as in dstack (logs may not be UTF-8). */
  message: z.string(),
});
export type LogEvent = z.output<typeof LogEventSchema>;

export const PollLogsResponseSchema = z.object({
  logs: z.array(LogEventSchema),
  /**
   * Where the next page starts; null when this page was the last one for now (as dstack answers:
   * its client polls until it gets null).
   */
  next_token: z.string().nullish(),
  /**
   * This server's own addition: the cursor after the rows returned, also on the last page. A
   * follower passes it back as `next_token` to get only the lines logged since (absent from
   * servers without it: follow `next_token`, then the last timestamp).
   */
  cursor: z.string().nullish(),
});

/** One line of `logs/stream`: a log event with the cursor that resumes right after it. */
export const LogStreamEventLineSchema = LogEventSchema.extend({ next_token: z.string() });
/**
 * Sent first, then whenever nothing else was sent for the heartbeat interval (15 s), so that
 * clients and proxies can tell a quiet run from a dead connection.
 */
export const LogStreamHeartbeatLineSchema = z.object({
  heartbeat: z.literal(true),
  /** The cursor so far (null before any event). */
  next_token: z.string().nullable(),
});
/**
 * The last line. `run_finished`: the run is finished and every log line was sent.
 * `server_stopping`: the server is shutting down; reconnect with `next_token`.
 */
export const LogStreamEndLineSchema = z.object({
  end: z.enum(['run_finished', 'server_stopping']),
  /** The run's status for `run_finished`. */
  status: RunStatusSchema.nullish(),
  next_token: z.string().nullable(),
});
/** A line of the newline-delimited JSON answer of `logs/stream`. */
export const LogStreamLineSchema = z.union([
  LogStreamEventLineSchema,
  LogStreamHeartbeatLineSchema,
  LogStreamEndLineSchema,
]);
export type LogStreamLine = z.output<typeof LogStreamLineSchema>;
export type LogStreamEventLine = z.output<typeof LogStreamEventLineSchema>;
export type LogStreamEndLine = z.output<typeof LogStreamEndLineSchema>;
