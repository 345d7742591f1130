import {
  type RunnerJobState,
  type RunnerLogEvent,
  type RunnerSubmitBody,
  shellCommandLine,
} from '@dstack/core/agent-protocol';
import type { RunnerClient } from '../client/runner-client.js';

/** A minimal valid submit body running the shell lines `commands` (`/bin/sh -c`); `jobSpec` overrides job_spec fields. */
export function submitBody(
  commands: string[],
  jobSpec: Partial<RunnerSubmitBody['job_spec']> = {},
  extra: Partial<RunnerSubmitBody> = {},
): RunnerSubmitBody {
  return {
    run: { id: 'run-id-1', run_name: 'test-run', project_name: 'main', user: 'admin' },
    job_spec: {
      job_name: 'test-run-0-0',
      job_num: 0,
      commands: shellCommandLine(commands),
      env: {},
      ...jobSpec,
    },
    job_submission: { id: 'job-submission-1', submission_num: 0 },
    ...extra,
  };
}

export interface PulledJob {
  states: RunnerJobState[];
  jobLogs: RunnerLogEvent[];
  runnerLogs: RunnerLogEvent[];
  /** How many pull answers were cut (`has_more`). */
  cutAnswers: number;
}

const TERMINAL_STATES = new Set(['done', 'failed', 'terminated']);

/** Pulls as dstack's server does (timestamp = last_updated) until `until` holds; collects everything. */
export async function pullUntil(
  client: RunnerClient,
  until: (job: PulledJob) => boolean = (job) => job.states.some((state) => TERMINAL_STATES.has(state.state)),
  pulled: PulledJob = { states: [], jobLogs: [], runnerLogs: [], cutAnswers: 0 },
  startTimestamp = 0,
): Promise<PulledJob> {
  let timestamp = startTimestamp;
  for (;;) {
    const answer = await client.pull(timestamp);
    pulled.states.push(...answer.job_states);
    pulled.jobLogs.push(...answer.job_logs);
    pulled.runnerLogs.push(...answer.runner_logs);
    timestamp = answer.last_updated;
    if (answer.has_more) {
      pulled.cutAnswers += 1;
      continue;
    }
    if (until(pulled)) {
      return pulled;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export function decodeLogs(logs: RunnerLogEvent[]): string {
  return logs.map((log) => Buffer.from(log.message, 'base64').toString('utf8')).join('');
}

/** True while a process (or, with a negative id, a process group) exists. */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** Waits until `condition` holds, polling; fails after `timeoutMs`. */
export async function waitFor(
  condition: () => boolean,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
