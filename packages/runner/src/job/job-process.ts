import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { needsGroupWrapper, spawnDroppingPrivileges, type WrapperReport } from './drop-privileges.js';
import type { SpawnIdentity } from './job-user.js';
import { LineSplitter } from './line-splitter.js';

export interface JobProcessOptions {
  /** The shell script, run by `/bin/sh -c`. */
  script: string;
  cwd: string;
  env: Record<string, string>;
  /** The user and groups the shell runs as (the runner must be root). Default: the runner's own. */
  spawnAs?: SpawnIdentity;
  onLine(source: 'stdout' | 'stderr', line: Buffer): void;
}

export type JobProcessExit =
  | { kind: 'exited'; code: number | null; signal: NodeJS.Signals | null }
  | { kind: 'spawn-failed'; error: Error };

/** How long to wait for the output pipes to close after the shell exits (a background child may hold them). */
const PIPE_DRAIN_TIMEOUT_MS = 2000;

/** The process the runner started for the job: the shell itself, or the wrapper that starts it. */
interface LaunchedShell {
  child: ChildProcess;
  stdout: Readable;
  stderr: Readable;
  /** The wrapper's report on the shell; undefined when the child is the shell. */
  report: Promise<WrapperReport | undefined>;
}

/**
 * The job's shell, in a process group of its own so that a stop reaches every process the
 * job started. `exit` settles once the shell has exited and its output has been read.
 */
export class JobProcess {
  readonly exit: Promise<JobProcessExit>;
  private readonly processGroupId: number | undefined;

  constructor(options: JobProcessOptions) {
    const { child, stdout: stdoutPipe, stderr: stderrPipe, report } = launchShell(options);
    this.processGroupId = child.pid;
    const stdout = new LineSplitter((line) => options.onLine('stdout', line));
    const stderr = new LineSplitter((line) => options.onLine('stderr', line));
    stdoutPipe.on('data', (chunk: Buffer) => stdout.push(chunk));
    stderrPipe.on('data', (chunk: Buffer) => stderr.push(chunk));

    this.exit = new Promise((resolve) => {
      child.once('error', (error) => {
        // 'error' without a pid means the process never started; otherwise 'exit' reports it.
        if (child.pid === undefined) {
          resolve({ kind: 'spawn-failed', error });
        }
      });
      child.once('exit', (code, signal) => {
        void report.then((reported) => {
          const finish = () => {
            stdout.flush();
            stderr.flush();
            if (reported === undefined) {
              // The shell itself, or a wrapper killed before it could report (SIGKILL kills the whole group).
              resolve({ kind: 'exited', code, signal });
            } else if (reported.kind === 'spawn-failed') {
              resolve({ kind: 'spawn-failed', error: new Error(reported.message) });
            } else {
              resolve({ kind: 'exited', code: reported.code, signal: reported.signal });
            }
          };
          if (stdoutPipe.closed && stderrPipe.closed) {
            finish();
            return;
          }
          const timer = setTimeout(() => {
            stdoutPipe.destroy();
            stderrPipe.destroy();
            finish();
          }, PIPE_DRAIN_TIMEOUT_MS);
          child.once('close', () => {
            clearTimeout(timer);
            finish();
          });
        });
      });
    });
  }

  /** The process group id (the pid of the shell, or of its wrapper); undefined if it never started. */
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

/**
 * Starts `/bin/sh -c script` as the leader of a new process group. A user with supplementary
 * groups goes through the wrapper of {@link spawnDroppingPrivileges}; otherwise node switches the
 * ids itself (libuv clears the groups, which leaves the primary group, the user's only one).
 * Either way the child changes into `cwd` before it drops to the job's ids.
 */
function launchShell(options: JobProcessOptions): LaunchedShell {
  const command = '/bin/sh';
  const args = ['-c', options.script];
  const identity = options.spawnAs;
  if (identity !== undefined && needsGroupWrapper(identity)) {
    return spawnDroppingPrivileges({ command, args, cwd: options.cwd, env: options.env, identity });
  }
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(identity === undefined ? {} : { uid: identity.uid, gid: identity.gid }),
  });
  return { child, stdout: child.stdout, stderr: child.stderr, report: Promise.resolve(undefined) };
}
