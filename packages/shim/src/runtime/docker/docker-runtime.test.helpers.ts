import { setTimeout as sleep } from 'node:timers/promises';
import { type RunnerJobState, shellCommandLine } from '@dstack/core/agent-protocol';
import { RunnerClient } from '@dstack/runner';

export interface JobResult {
  states: RunnerJobState[];
  output: string;
}

/** Submits the commands to the runner, runs them, and pulls until the job reaches a final state. */
export async function runJob(runnerPort: number, commands: string[], token?: string): Promise<JobResult> {
  const runner = new RunnerClient(`http://127.0.0.1:${runnerPort}`, { token });
  await runner.submit({
    run: { id: 'r', run_name: 'r', project_name: 'p', user: 'u' },
    job_spec: { job_name: 'r-0-0', job_num: 0, commands: shellCommandLine(commands), env: {} },
    job_submission: { id: 's' },
  });
  await runner.run();
  const states: RunnerJobState[] = [];
  let output = '';
  let timestamp = 0;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const pulled = await runner.pull(timestamp);
    states.push(...pulled.job_states);
    for (const log of pulled.job_logs) output += Buffer.from(log.message, 'base64').toString('utf8');
    timestamp = pulled.last_updated;
    if (states.some((state) => ['done', 'failed', 'terminated'].includes(state.state)) && !pulled.has_more) {
      return { states, output };
    }
    if (!pulled.has_more) await sleep(200);
  }
  throw new Error(`the job did not finish; states so far: ${JSON.stringify(states)}; output: ${output}`);
}
