import type {
  RunnerJobState,
  RunnerJobStatus,
  RunnerLogEvent,
  RunnerLogSource,
  RunnerPullResponse,
} from '@dstack/core/agent-protocol';
import { BoundedEventList } from './bounded-event-list.js';
import { MonotonicClock } from './monotonic-clock.js';

export interface JobEventLogOptions {
  /** Job log lines kept in memory; older ones are dropped. Default 100 000. */
  maxJobLogLines?: number;
  /** Runner log lines kept in memory. Default 10 000. */
  maxRunnerLogLines?: number;
  /** Log entries (job and runner) in one pull answer. Default 1000. */
  maxLogsPerPull?: number;
}

/**
 * Everything a pull returns: job states, job output and the runner's own log, all stamped by
 * one clock so that every entry has a distinct timestamp and `timestamp=last_updated` resumes
 * exactly after the last entry returned. Log entries also carry their position in the job's
 * log, which identifies an entry pulled twice (by two server replicas).
 */
export class JobEventLog {
  private readonly clock = new MonotonicClock();
  /** The last log entry's `position`. */
  private lastPosition = 0;
  private readonly states = new BoundedEventList<RunnerJobState>(Number.MAX_SAFE_INTEGER);
  private readonly jobLogs: BoundedEventList<RunnerLogEvent>;
  private readonly runnerLogs: BoundedEventList<RunnerLogEvent>;
  private readonly maxLogsPerPull: number;
  private droppedJobLogLines = 0;

  constructor(options: JobEventLogOptions = {}) {
    this.jobLogs = new BoundedEventList(options.maxJobLogLines ?? 100_000);
    this.runnerLogs = new BoundedEventList(options.maxRunnerLogLines ?? 10_000);
    this.maxLogsPerPull = options.maxLogsPerPull ?? 1000;
  }

  addState(
    state: RunnerJobStatus,
    details: { terminationReason?: string; terminationMessage?: string; exitStatus?: number | null } = {},
  ): void {
    this.states.push({
      state,
      timestamp: this.clock.next(),
      termination_reason: details.terminationReason ?? null,
      termination_message: details.terminationMessage ?? null,
      exit_status: details.exitStatus ?? null,
    });
  }

  addJobLog(source: Exclude<RunnerLogSource, 'runner'>, line: Uint8Array): void {
    const dropped = this.jobLogs.push({
      message: Buffer.from(line).toString('base64'),
      timestamp: this.clock.next(),
      source,
      position: ++this.lastPosition,
    });
    if (dropped > 0) {
      if (this.droppedJobLogLines === 0) {
        this.addRunnerLog('job log exceeds the in-memory limit: the oldest lines are being dropped');
      }
      this.droppedJobLogLines += dropped;
    }
  }

  addRunnerLog(text: string): void {
    this.runnerLogs.push({
      message: Buffer.from(`${text}\n`).toString('base64'),
      timestamp: this.clock.next(),
      source: 'runner',
      position: ++this.lastPosition,
    });
  }

  /** Entries strictly newer than `timestamp`, oldest first, cut after `maxLogsPerPull` log lines. */
  pull(timestamp: number): RunnerPullResponse {
    const jobLogs: RunnerLogEvent[] = [];
    const runnerLogs: RunnerLogEvent[] = [];
    let jobIndex = this.jobLogs.firstAfter(timestamp);
    let runnerIndex = this.runnerLogs.firstAfter(timestamp);
    let cutoff = Number.POSITIVE_INFINITY;
    let hasMore = false;
    // Merge both logs by timestamp so the cut falls at one point in time for both.
    for (;;) {
      const jobLog = this.jobLogs.at(jobIndex);
      const runnerLog = this.runnerLogs.at(runnerIndex);
      if (jobLog === undefined && runnerLog === undefined) {
        break;
      }
      if (jobLogs.length + runnerLogs.length === this.maxLogsPerPull) {
        cutoff = Math.max(jobLogs.at(-1)?.timestamp ?? 0, runnerLogs.at(-1)?.timestamp ?? 0);
        hasMore = true;
        break;
      }
      if (runnerLog === undefined || (jobLog !== undefined && jobLog.timestamp < runnerLog.timestamp)) {
        jobLogs.push(jobLog!);
        jobIndex += 1;
      } else {
        runnerLogs.push(runnerLog);
        runnerIndex += 1;
      }
    }
    const jobStates: RunnerJobState[] = [];
    for (let index = this.states.firstAfter(timestamp); ; index += 1) {
      const state = this.states.at(index);
      if (state === undefined || state.timestamp > cutoff) {
        break;
      }
      jobStates.push(state);
    }
    const lastUpdated = Math.max(
      timestamp,
      jobStates.at(-1)?.timestamp ?? 0,
      jobLogs.at(-1)?.timestamp ?? 0,
      runnerLogs.at(-1)?.timestamp ?? 0,
    );
    return {
      job_states: jobStates,
      job_logs: jobLogs,
      runner_logs: runnerLogs,
      last_updated: lastUpdated,
      has_more: hasMore,
    };
  }
}
