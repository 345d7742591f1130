import { setTimeout as sleep } from 'node:timers/promises';
import { RunnerClient } from '@dstack/runner';

export type RunnerWaitOutcome =
  | { kind: 'healthy' }
  | { kind: 'exited'; exitCode: number | null }
  | { kind: 'timed-out' };

export interface WaitForRunnerOptions {
  /** The runner's base URL, e.g. `http://127.0.0.1:12345`. */
  url: string;
  /** Settles when the container stops; polling stops then. */
  exited: Promise<{ exitCode: number | null }>;
  timeoutMs: number;
  /** Pause between two healthcheck attempts. */
  intervalMs?: number;
}

/** Polls the runner's healthcheck until it answers, its container exits, or time runs out. */
export async function waitForRunner(options: WaitForRunnerOptions): Promise<RunnerWaitOutcome> {
  const intervalMs = options.intervalMs ?? 200;
  const client = new RunnerClient(options.url, { timeoutMs: Math.min(2_000, options.timeoutMs) });
  let exit: { exitCode: number | null } | undefined;
  void options.exited.then((result) => {
    exit = result;
  });
  // Read through a function: `exit` changes in the callback, which narrowing cannot see.
  const exitedOutcome = (): RunnerWaitOutcome | undefined =>
    exit === undefined ? undefined : { kind: 'exited', exitCode: exit.exitCode };
  const deadline = Date.now() + options.timeoutMs;
  while (true) {
    const exitedBeforeAttempt = exitedOutcome();
    if (exitedBeforeAttempt !== undefined) return exitedBeforeAttempt;
    try {
      await client.healthcheck();
      return { kind: 'healthy' };
    } catch {
      // Not listening yet: try again until the deadline.
    }
    const exitedDuringAttempt = exitedOutcome();
    if (exitedDuringAttempt !== undefined) return exitedDuringAttempt;
    if (Date.now() >= deadline) return { kind: 'timed-out' };
    await sleep(intervalMs);
  }
}
