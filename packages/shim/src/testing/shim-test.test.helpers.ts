import { type ChildProcessByStdio, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import {
  DEFAULT_JOB_IMAGE,
  type RunnerJobState,
  type RunnerLogEvent,
  type RunnerSubmitBody,
  shellCommandLine,
  type TaskConfigInput,
} from '@dstack/core/agent-protocol';
import type { RunnerClient } from '@dstack/runner';

export type Child = ChildProcessByStdio<null, Readable, Readable>;

/** A task in the default image, the one image the process runtime runs. */
export function taskConfig(id: string, overrides: Partial<TaskConfigInput> = {}): TaskConfigInput {
  return { id, name: `task-${id}`, image_name: DEFAULT_JOB_IMAGE, ...overrides };
}

export function submitBody(commands: string[], stopDuration: number | null = null): RunnerSubmitBody {
  return {
    run: { id: 'run-1', run_name: 'shim-test-run', project_name: 'main', user: 'admin' },
    job_spec: {
      job_name: 'shim-test-run-0-0',
      job_num: 0,
      commands: shellCommandLine(commands),
      env: {},
      stop_duration: stopDuration,
    },
    job_submission: { id: 'submission-1' },
  };
}

/** Pulls the runner (timestamp = last_updated) until `until` holds on what was collected. */
export async function pullUntil(
  client: RunnerClient,
  until: (collected: { states: RunnerJobState[]; output: string }) => boolean,
): Promise<{ states: RunnerJobState[]; output: string }> {
  const collected = { states: [] as RunnerJobState[], output: '' };
  let timestamp = 0;
  for (;;) {
    const answer = await client.pull(timestamp);
    collected.states.push(...answer.job_states);
    collected.output += decode(answer.job_logs);
    timestamp = answer.last_updated;
    if (!answer.has_more && until(collected)) {
      return collected;
    }
    if (!answer.has_more) {
      await sleep(50);
    }
  }
}

export function isFinished(collected: { states: RunnerJobState[] }): boolean {
  return collected.states.some((state) => ['done', 'failed', 'terminated'].includes(state.state));
}

function decode(logs: RunnerLogEvent[]): string {
  return logs.map((log) => Buffer.from(log.message, 'base64').toString('utf8')).join('');
}

export function sleep(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}

/** Polls `probe` until it returns something other than undefined; fails after `timeoutMs`. */
export async function eventually<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  what: string,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await sleep(50);
  }
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

/** Builds `filter` with turbo when `requiredFile` is missing, so bin tests also run on a fresh clone. */
export function buildIfMissing(requiredFile: string, filter: string): void {
  if (existsSync(requiredFile)) {
    return;
  }
  const repositoryRoot = fileURLToPath(new URL('../../../../', import.meta.url));
  execFileSync('pnpm', ['turbo', 'run', 'build', `--filter=${filter}`, '--output-logs=errors-only'], {
    cwd: repositoryRoot,
    stdio: 'inherit',
  });
  if (!existsSync(requiredFile)) {
    throw new Error(`${requiredFile} is still missing after building ${filter}`);
  }
}

/** Spawns `node script args...`, collecting stdout and stderr. */
export function spawnNode(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  /** The node to run it with, as a command line (a portable runtime's loader, its options, its node). */
  node: readonly string[] = [process.execPath],
): { child: Child; output: () => string } {
  const [command = process.execPath, ...nodeArgs] = node;
  const child = spawn(command, [...nodeArgs, script, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  return { child, output: () => output };
}

/** Resolves with the exit code once the child has exited (at once if it already has). */
export function waitForExit(child: Child): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve(child.exitCode);
  }
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** Stops a child left running by a failed test: SIGKILL, then wait. */
export async function killChild(child: Child | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) {
    return;
  }
  child.kill('SIGKILL');
  await waitForExit(child);
}
