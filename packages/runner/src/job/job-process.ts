import { spawn } from 'node:child_process';
import type { ProcessIdentity } from './job-user.js';
import { LineSplitter } from './line-splitter.js';

export interface JobProcessOptions {
  /** The shell script, run by `/bin/sh -c`. */
  script: string;
  cwd: string;
  env: Record<string, string>;
  /** The user and group the shell runs as (the runner must be root). Default: the runner's own. */
  spawnAs?: ProcessIdentity;
  onLine(source: 'stdout' | 'stderr', line: Buffer): void;
}

export type JobProcessExit =
  | { kind: 'exited'; code: number | null; signal: NodeJS.Signals | null }
  | { kind: 'spawn-failed'; error: Error };

/** How long to wait for the output pipes to close after the shell exits (a background child may hold them). */
const PIPE_DRAIN_TIMEOUT_MS = 2000;

/**
 * The job's shell, in a process group of its own so that a stop reaches every process the
 * job started. `exit` settles once the shell has exited and its output has been read.
 */
export class JobProcess {
  readonly exit: Promise<JobProcessExit>;
  private readonly processGroupId: number | undefined;

  constructor(options: JobProcessOptions) {
    const child = spawn('/bin/sh', ['-c', options.script], {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      // The child changes into `cwd` before it drops to these ids, and it keeps no supplementary
      // groups (libuv clears them): the user's primary group is its only one.
      ...(options.spawnAs === undefined ? {} : { uid: options.spawnAs.uid, gid: options.spawnAs.gid }),
    });
    this.processGroupId = child.pid;
    const stdout = new LineSplitter((line) => options.onLine('stdout', line));
    const stderr = new LineSplitter((line) => options.onLine('stderr', line));
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));

    this.exit = new Promise((resolve) => {
      child.once('error', (error) => {
        // 'error' without a pid means the process never started; otherwise 'exit' reports it.
        if (child.pid === undefined) {
          resolve({ kind: 'spawn-failed', error });
        }
      });
      child.once('exit', (code, signal) => {
        const finish = () => {
          stdout.flush();
          stderr.flush();
          resolve({ kind: 'exited', code, signal });
        };
        if (child.stdout.closed && child.stderr.closed) {
          finish();
          return;
        }
        const timer = setTimeout(() => {
          child.stdout.destroy();
          child.stderr.destroy();
          finish();
        }, PIPE_DRAIN_TIMEOUT_MS);
        child.once('close', () => {
          clearTimeout(timer);
          finish();
        });
      });
    });
  }

  /** The shell's pid, which is also the process group id; undefined if it never started. */
  get pid(): number | undefined {
    return this.processGroupId;
  }

  /** Sends `signal` to every process of the job; a group that is already gone is ignored. */
  signalGroup(signal: NodeJS.Signals): void {
    if (this.processGroupId === undefined) {
      return;
    }
    try {
      process.kill(-this.processGroupId, signal);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') {
        throw error;
      }
    }
  }
}
