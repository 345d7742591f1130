import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { z } from 'zod';
import type { SpawnIdentity } from './job-user.js';
import { currentNodeCommand } from './node-command.js';

/*
 * Node's spawn drops every supplementary group when it switches users (libuv calls
 * `setgroups(0, NULL)`) and has no option to set them, unlike Go's `syscall.Credential` that
 * dstack's runner uses. So a job whose user has supplementary groups starts through a wrapper: a
 * node process that the runner starts as root, in the job's working directory and as the leader
 * of the job's process group, which sets the groups, the gid and the uid on itself (in that order:
 * each step needs the privileges the next one gives up), then starts the command and reports how
 * it ended.
 *
 * - The wrapper ignores SIGTERM, SIGINT and SIGHUP: the runner signals the whole group, so the
 *   command gets them itself, and the wrapper must outlive it to report its exit. SIGKILL ends both.
 * - The request and the report travel over node's IPC channel. The command does not inherit it
 *   (node keeps it close-on-exec), and the exit status comes back exactly as the command's,
 *   signal included, with no exit code convention to decode.
 * - The command inherits the wrapper's stdin: /dev/null for a job, a pipe for an SSH session.
 * - The wrapper runs with an empty environment and gets the job's in the request: a NODE_OPTIONS
 *   in the job's environment must not run code in a node process that is still root.
 *
 * It is source text for `node -e`, not a file next to the runner: the runner also ships as a
 * single-file bundle (alone, or in a portable runtime) in the job's container.
 */
const WRAPPER_SCRIPT = `
'use strict';
const { spawn } = require('node:child_process');
const ignore = () => {};
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, ignore);
const report = (message) => process.send(message, () => process.exit(0));
process.once('message', (request) => {
  try {
    process.setgroups(request.groups);
    process.setgid(request.gid);
    process.setuid(request.uid);
  } catch (error) {
    const ids = 'uid ' + request.uid + ' (gid ' + request.gid + ', groups ' + request.groups.join(',') + ')';
    report({ kind: 'spawn-failed', message: 'cannot switch to ' + ids + ': ' + error.message });
    return;
  }
  let child;
  try {
    child = spawn(request.command, request.args, { env: request.env, stdio: 'inherit' });
  } catch (error) {
    report({ kind: 'spawn-failed', message: error.message });
    return;
  }
  child.once('error', (error) => {
    if (child.pid === undefined) report({ kind: 'spawn-failed', message: error.message });
  });
  child.once('exit', (code, signal) => report({ kind: 'exited', code, signal }));
});
`;

/** What the runner asks the wrapper to run. */
interface WrapperRequest {
  command: string;
  args: string[];
  env: Record<string, string>;
  uid: number;
  gid: number;
  groups: number[];
}

const WrapperReportSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('exited'),
    code: z.number().int().nullable(),
    signal: z.custom<NodeJS.Signals>((value) => typeof value === 'string').nullable(),
  }),
  z.object({ kind: z.literal('spawn-failed'), message: z.string() }),
]);

/** How the wrapped command ended, or why it could not start. */
export type WrapperReport = z.infer<typeof WrapperReportSchema>;

export interface DropPrivilegesOptions {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  identity: SpawnIdentity;
  /** The command's stdin: `/dev/null`, or a pipe the caller writes. Default `ignore`. */
  stdin?: 'ignore' | 'pipe';
}

export interface PrivilegeDroppingChild {
  /** The wrapper, leader of a new process group; the command writes to its stdout and stderr. */
  child: ChildProcess;
  /** The command's stdin; null unless `stdin: 'pipe'` was asked for. */
  stdin: Writable | null;
  stdout: Readable;
  stderr: Readable;
  /**
   * Settles once the wrapper's channel has closed: with its report, or undefined when it sent
   * none (it was killed, or never started); its own exit then tells how it ended.
   */
  report: Promise<WrapperReport | undefined>;
}

/** True when switching to `identity` needs the wrapper: node's own spawn would lose groups. */
export function needsGroupWrapper(identity: SpawnIdentity): boolean {
  return identity.groups.some((group) => group !== identity.gid);
}

/** Starts `command` as `identity`, supplementary groups included, through the wrapper (the runner must be root). */
export function spawnDroppingPrivileges(options: DropPrivilegesOptions): PrivilegeDroppingChild {
  // The runner's own node, also when it runs from a portable runtime through its loader.
  const node = currentNodeCommand();
  const child = spawn(node.command, [...node.args, '-e', WRAPPER_SCRIPT], {
    cwd: options.cwd,
    env: {},
    detached: true,
    stdio: [options.stdin ?? 'ignore', 'pipe', 'pipe', 'ipc'],
  });
  const report = new Promise<WrapperReport | undefined>((resolve) => {
    child.once('message', (message) => {
      const parsed = WrapperReportSchema.safeParse(message);
      resolve(parsed.success ? parsed.data : undefined);
    });
    child.once('disconnect', () => resolve(undefined));
    child.once('error', () => {
      if (child.pid === undefined) resolve(undefined);
    });
  });
  if (child.pid !== undefined) {
    const request: WrapperRequest = {
      command: options.command,
      args: options.args,
      env: options.env,
      uid: options.identity.uid,
      gid: options.identity.gid,
      groups: options.identity.groups,
    };
    // A failed send means the wrapper is gone: its exit already tells what happened.
    child.send(request, () => {});
  }
  if (child.stdout === null || child.stderr === null) {
    throw new Error('the privilege-dropping wrapper was spawned without output pipes');
  }
  return { child, stdin: child.stdin, stdout: child.stdout, stderr: child.stderr, report };
}
