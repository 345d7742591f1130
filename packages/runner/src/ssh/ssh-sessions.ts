import { constants as fsConstants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import { delimiter, join } from 'node:path';
import type { PseudoTtyInfo, ServerChannel, Session } from 'ssh2';
import type { SpawnIdentity } from '../job/job-user.js';
import { type CommandExit, commandExit, signalProcessGroup, spawnAs } from '../job/spawn-as.js';

/** Who a session's command runs as, where and with what environment: the job's own. */
export interface SessionLaunch {
  identity: SpawnIdentity | undefined;
  workingDir: string;
  env: Record<string, string>;
}

export interface SessionContext {
  /** Rejects when the job cannot run as its user; the session then reports why and exits 1. */
  launch(): Promise<SessionLaunch>;
  /** Called with each command's process group id while it runs, so that closing the runner kills it. */
  track(groupId: number): () => void;
}

/** What `script` and the shells are looked up as. */
const SCRIPT = 'script';
const INTERACTIVE_SHELLS = ['/bin/bash', '/bin/sh'];
const PLAIN_SHELL = '/bin/sh';

/** Exit status of a session whose command could not start, as a shell reports "command not found". */
const SPAWN_FAILED_STATUS = 127;
/** Exit status of a session that could not be prepared (the job cannot run as its user). */
const LAUNCH_FAILED_STATUS = 1;

/**
 * Serves one `session` channel: `pty-req` (remembered), `shell` and `exec` (the command runs as
 * the job's user in the job's directory with its environment), `signal` (sent to the command's
 * process group). `env` is refused: the session gets the job's environment. `window-change` is
 * accepted and ignored: the terminal belongs to `script`, which cannot be resized from outside.
 * No subsystem (sftp) is served.
 */
export function serveSession(session: Session, context: SessionContext): void {
  let pty: PseudoTtyInfo | undefined;
  let groupId: number | undefined;
  session.on('pty', (accept, _reject, info) => {
    pty = info;
    accept?.();
  });
  session.on('window-change', (accept) => accept?.());
  session.on('env', (_accept, reject) => reject?.());
  session.on('signal', (accept, reject, info) => {
    const signal = `SIG${info.name.replace(/^SIG/, '')}`;
    if (!(signal in osConstants.signals)) {
      reject?.();
      return;
    }
    signalProcessGroup(groupId, signal as NodeJS.Signals);
    accept?.();
  });
  const start = (channel: ServerChannel, command: string | undefined) => {
    runCommand(channel, command, pty, context, (id) => {
      groupId = id;
    }).catch((error: unknown) => finishWithError(channel, error, LAUNCH_FAILED_STATUS));
  };
  session.on('shell', (accept) => start(accept(), undefined));
  session.on('exec', (accept, _reject, info) => start(accept(), info.command));
}

async function runCommand(
  channel: ServerChannel,
  command: string | undefined,
  pty: PseudoTtyInfo | undefined,
  context: SessionContext,
  started: (groupId: number) => void,
): Promise<void> {
  const launch = await context.launch();
  const env = pty === undefined ? launch.env : { ...launch.env, TERM: pty.term };
  const commandLine = await sessionCommandLine(command, pty, env.PATH ?? '');
  const cwd = await firstDirectory([launch.workingDir, env.HOME ?? '/', '/']);
  const spawned = spawnAs({ ...commandLine, cwd, env, identity: launch.identity, stdin: 'pipe' });
  const { child, stdin, stdout, stderr } = spawned;
  // The command may exit without reading its input: writes that follow fail, which is no error of the session.
  stdin?.on('error', () => undefined);
  if (stdin !== null) channel.pipe(stdin);
  stdout.pipe(channel, { end: false });
  stderr.pipe(channel.stderr, { end: false });
  const untrack = child.pid === undefined ? () => undefined : context.track(child.pid);
  if (child.pid !== undefined) started(child.pid);
  let exited = false;
  let channelClosed = false;
  // A client that goes away leaves no orphans behind, as a hung-up terminal does.
  channel.once('close', () => {
    channelClosed = true;
    if (!exited) signalProcessGroup(child.pid, 'SIGHUP');
  });
  const exit = await new Promise<CommandExit>((resolve) => {
    child.once('error', (error) => {
      if (child.pid === undefined) resolve({ kind: 'spawn-failed', error });
    });
    // 'close' comes after the output pipes closed, so every byte was handed to the channel.
    child.once('close', (code, signal) => {
      void spawned.report.then((reported) => resolve(commandExit(code, signal, reported)));
    });
  });
  exited = true;
  untrack();
  if (channelClosed) return;
  if (exit.kind === 'spawn-failed') {
    finishWithError(channel, exit.error, SPAWN_FAILED_STATUS);
    return;
  }
  if (exit.signal !== null) {
    reportSignal(channel, exit.signal);
  } else {
    channel.exit(exit.code ?? 0);
  }
  channel.end();
}

/**
 * What a session runs. Without a terminal: `/bin/sh -c command`, or `/bin/sh` reading commands
 * from the channel. With one, under `script` (util-linux) when the job's image has it, which
 * gives the command a terminal of its own sized as the client asked; else as without one.
 * Shells are not login shells: a profile would reset PATH and lose the job's environment.
 */
async function sessionCommandLine(
  command: string | undefined,
  pty: PseudoTtyInfo | undefined,
  path: string,
): Promise<{ command: string; args: string[] }> {
  const script = pty === undefined ? undefined : await findExecutable(SCRIPT, path);
  if (pty === undefined || script === undefined) {
    return { command: PLAIN_SHELL, args: command === undefined ? [] : ['-c', command] };
  }
  const shell = (await firstExecutable(INTERACTIVE_SHELLS)) ?? PLAIN_SHELL;
  const size = pty.rows > 0 && pty.cols > 0 ? `stty rows ${pty.rows} cols ${pty.cols} 2>/dev/null; ` : '';
  const inner = `${size}${command ?? `exec ${shell}`}`;
  return { command: script, args: ['-qfec', inner, '/dev/null'] };
}

/** SSH names signals without `SIG` and knows only some; others are reported as a shell would, 128 + number. */
function reportSignal(channel: ServerChannel, signal: NodeJS.Signals): void {
  try {
    channel.exit(signal.replace(/^SIG/, ''), false, '');
  } catch {
    channel.exit(128 + (osConstants.signals[signal] ?? 0));
  }
}

function finishWithError(channel: ServerChannel, error: unknown, status: number): void {
  const message = error instanceof Error ? error.message : String(error);
  channel.stderr.write(`dstack-runner: ${message}\n`);
  channel.exit(status);
  channel.end();
}

async function findExecutable(name: string, path: string): Promise<string | undefined> {
  return firstExecutable(
    path
      .split(delimiter)
      .filter((directory) => directory !== '')
      .map((directory) => join(directory, name)),
  );
}

async function firstExecutable(candidates: string[]): Promise<string | undefined> {
  for (const candidate of candidates) {
    try {
      await access(candidate, fsConstants.X_OK);
      return candidate;
    } catch {}
  }
  return undefined;
}

/** The job's directory exists only once the job was started: a session opened before falls back to HOME, then `/`. */
async function firstDirectory(candidates: string[]): Promise<string> {
  for (const candidate of candidates) {
    try {
      if ((await stat(candidate)).isDirectory()) return candidate;
    } catch {}
  }
  return '/';
}
