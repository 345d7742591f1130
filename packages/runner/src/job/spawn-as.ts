import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { needsGroupWrapper, spawnDroppingPrivileges, type WrapperReport } from './drop-privileges.js';
import type { SpawnIdentity } from './job-user.js';

export interface SpawnAsOptions {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** The user and groups the command runs as (the runner must be root). Default: the runner's own. */
  identity?: SpawnIdentity;
  /** The command's stdin: `/dev/null` (a job) or a pipe (an SSH session). Default `ignore`. */
  stdin?: 'ignore' | 'pipe';
}

/** The process the runner started: the command itself, or the wrapper that starts it. */
export interface SpawnedCommand {
  /** The leader of a new process group: signal `-child.pid` to reach everything the command starts. */
  child: ChildProcess;
  /** Null unless `stdin: 'pipe'`. */
  stdin: Writable | null;
  stdout: Readable;
  stderr: Readable;
  /** The wrapper's report on the command; undefined when the child is the command. */
  report: Promise<WrapperReport | undefined>;
}

/** How a command ended, or why it never started. */
export type CommandExit =
  | { kind: 'exited'; code: number | null; signal: NodeJS.Signals | null }
  | { kind: 'spawn-failed'; error: Error };

/**
 * Starts `command` as `identity`, the leader of a new process group. A user with supplementary
 * groups goes through the wrapper of {@link spawnDroppingPrivileges}; otherwise node switches the
 * ids itself (libuv clears the groups, which leaves the primary group, the user's only one).
 * Either way the child changes into `cwd` before it drops to the user's ids.
 */
export function spawnAs(options: SpawnAsOptions): SpawnedCommand {
  const { command, args, cwd, env, identity } = options;
  const stdin = options.stdin ?? 'ignore';
  if (identity !== undefined && needsGroupWrapper(identity)) {
    return spawnDroppingPrivileges({ command, args, cwd, env, identity, stdin });
  }
  const child = spawn(command, args, {
    cwd,
    env,
    detached: true,
    stdio: [stdin, 'pipe', 'pipe'],
    ...(identity === undefined ? {} : { uid: identity.uid, gid: identity.gid }),
  });
  if (child.stdout === null || child.stderr === null) {
    throw new Error(`${command} was spawned without output pipes`);
  }
  return {
    child,
    stdin: child.stdin,
    stdout: child.stdout,
    stderr: child.stderr,
    report: Promise.resolve(undefined),
  };
}

/** The command's end from the child's own exit and the wrapper's report (which wins when there is one). */
export function commandExit(
  code: number | null,
  signal: NodeJS.Signals | null,
  reported: WrapperReport | undefined,
): CommandExit {
  if (reported === undefined) {
    // The command itself, or a wrapper killed before it could report (SIGKILL kills the whole group).
    return { kind: 'exited', code, signal };
  }
  if (reported.kind === 'spawn-failed') return { kind: 'spawn-failed', error: new Error(reported.message) };
  return { kind: 'exited', code: reported.code, signal: reported.signal };
}

/** Sends `signal` to a process group; a group that is already gone is ignored. */
export function signalProcessGroup(groupId: number | undefined, signal: NodeJS.Signals): void {
  if (groupId === undefined) return;
  try {
    process.kill(-groupId, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}
