import type { SpawnIdentity } from './job-user.js';
import { LineSplitter } from './line-splitter.js';
import { type CommandExit, commandExit, signalProcessGroup, spawnAs } from './spawn-as.js';

export interface JobProcessOptions {
  /** The program (dstack's job spec: `commands[0]`, usually a shell), found on the job's `PATH`. */
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** The user and groups the shell runs as (the runner must be root). Default: the runner's own. */
  spawnAs?: SpawnIdentity;
  onLine(source: 'stdout' | 'stderr', line: Buffer): void;
}

export type JobProcessExit = CommandExit;

/** How long to wait for the output pipes to close after the shell exits (a background child may hold them). */
const PIPE_DRAIN_TIMEOUT_MS = 2000;

/**
 * The job's command, in a process group of its own so that a stop reaches every process the
 * job started. `exit` settles once the shell has exited and its output has been read.
 */
export class JobProcess {
  readonly exit: Promise<JobProcessExit>;
  private readonly processGroupId: number | undefined;

  constructor(options: JobProcessOptions) {
    const {
      child,
      stdout: stdoutPipe,
      stderr: stderrPipe,
      report,
    } = spawnAs({
      command: options.command,
      args: options.args,
      cwd: options.cwd,
      env: options.env,
      identity: options.spawnAs,
    });
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
            resolve(commandExit(code, signal, reported));
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
    signalProcessGroup(this.processGroupId, signal);
  }
}
