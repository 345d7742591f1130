import { describe, expect, it } from 'vitest';
import { JobEventLog } from './job-event-log.js';

function pullAll(log: JobEventLog) {
  const messages: string[] = [];
  let timestamp = 0;
  let answers = 0;
  for (;;) {
    const answer = log.pull(timestamp);
    answers += 1;
    const entries = [...answer.job_logs, ...answer.runner_logs].sort((a, b) => a.timestamp - b.timestamp);
    messages.push(...entries.map((entry) => Buffer.from(entry.message, 'base64').toString()));
    timestamp = answer.last_updated;
    if (!answer.has_more) {
      return { messages, answers, lastUpdated: timestamp };
    }
  }
}

describe('JobEventLog', () => {
  it('gives every entry a distinct, increasing timestamp', () => {
    const log = new JobEventLog();
    log.addState('running');
    for (let line = 0; line < 50; line += 1) {
      log.addJobLog('stdout', Buffer.from(`${line}\n`));
      log.addRunnerLog(`r${line}`);
    }
    const answer = log.pull(0);
    const timestamps = [...answer.job_states, ...answer.job_logs, ...answer.runner_logs]
      .map((entry) => entry.timestamp)
      .sort((a, b) => a - b);
    expect(new Set(timestamps).size).toBe(101);
    expect(answer.last_updated).toBe(timestamps.at(-1));
  });

  it('numbers the log entries of job and runner in one sequence from 1', () => {
    const log = new JobEventLog({ maxJobLogLines: 2 });
    log.addJobLog('stdout', Buffer.from('a\n'));
    log.addRunnerLog('r');
    log.addState('running');
    log.addJobLog('stderr', Buffer.from('b\n'));
    log.addJobLog('stdout', Buffer.from('c\n'));
    const answer = log.pull(0);
    // The oldest job line was dropped (the limit is 2), which adds a runner line about it.
    expect(answer.job_logs.map((entry) => entry.position)).toEqual([3, 4]);
    expect(answer.runner_logs.map((entry) => entry.position)).toEqual([2, 5]);
    // A second pull of the same entries carries the same positions.
    expect(log.pull(0)).toEqual(answer);
  });

  it('pages job and runner logs together without losing or repeating an entry', () => {
    const log = new JobEventLog({ maxLogsPerPull: 7 });
    const expected: string[] = [];
    for (let line = 0; line < 30; line += 1) {
      log.addJobLog('stdout', Buffer.from(`job ${line}\n`));
      expected.push(`job ${line}\n`);
      if (line % 3 === 0) {
        log.addRunnerLog(`runner ${line}`);
        expected.push(`runner ${line}\n`);
      }
    }
    const { messages, answers } = pullAll(log);
    expect(messages).toEqual(expected);
    expect(answers).toBe(Math.ceil(expected.length / 7));
  });

  it('returns a state only with the page its time falls in', () => {
    const log = new JobEventLog({ maxLogsPerPull: 2 });
    log.addJobLog('stdout', Buffer.from('1\n'));
    log.addJobLog('stdout', Buffer.from('2\n'));
    log.addJobLog('stdout', Buffer.from('3\n'));
    log.addState('done', { terminationReason: 'done_by_runner', exitStatus: 0 });
    const first = log.pull(0);
    expect(first.has_more).toBe(true);
    expect(first.job_states).toEqual([]);
    const second = log.pull(first.last_updated);
    expect(second.has_more).toBe(false);
    expect(second.job_logs).toHaveLength(1);
    expect(second.job_states.map((state) => state.state)).toEqual(['done']);
    expect(log.pull(second.last_updated)).toMatchObject({ job_states: [], job_logs: [], has_more: false });
  });

  it('drops the oldest job lines beyond the limit and says so in the runner log', () => {
    const log = new JobEventLog({ maxJobLogLines: 5 });
    for (let line = 0; line < 12; line += 1) {
      log.addJobLog('stdout', Buffer.from(`${line}\n`));
    }
    const answer = log.pull(0);
    expect(answer.job_logs.map((entry) => Buffer.from(entry.message, 'base64').toString())).toEqual([
      '7\n',
      '8\n',
      '9\n',
      '10\n',
      '11\n',
    ]);
    expect(answer.runner_logs).toHaveLength(1);
    expect(Buffer.from(answer.runner_logs[0]!.message, 'base64').toString()).toContain('oldest lines');
  });

  it('answers a timestamp past everything with nothing and keeps it', () => {
    const log = new JobEventLog();
    log.addRunnerLog('hello');
    const future = Date.now() + 60_000;
    expect(log.pull(future)).toEqual({
      job_states: [],
      job_logs: [],
      runner_logs: [],
      last_updated: future,
      has_more: false,
    });
  });
});
