/**
 * Running the docker CLI: the emulated hosts need create, cp (a tar on stdin), start, run, rm,
 * inspect and network commands, each a one-liner through the CLI, with the CLI's own handling of
 * DOCKER_HOST and contexts. Every call is bounded by a timeout.
 */
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';

/** How long one docker command may take before it is killed. Default 60 s. */
export const DEFAULT_DOCKER_COMMAND_TIMEOUT_MS = 60_000;

export class DockerCommandError extends Error {
  override readonly name = 'DockerCommandError';
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number | null,
    readonly stderr: string,
    options?: { cause?: unknown },
  ) {
    super(
      `docker ${args.slice(0, 2).join(' ')} failed${exitCode === null ? '' : ` (exit ${exitCode})`}: ${stderr.trim() || 'no output'}`,
      options,
    );
  }

  /** Whether the daemon said the named object does not exist. */
  get isNotFound(): boolean {
    return /no such (container|network|object|image)|not found/i.test(this.stderr);
  }
}

export interface DockerCommandOptions {
  /** Bytes for the command's standard input (e.g. a tar for `docker cp -`). */
  input?: Buffer;
  timeoutMs?: number;
  /** The docker CLI to run. Default `docker` on the PATH. */
  dockerBinary?: string;
}

/** Runs `docker ...args` and returns its standard output; a non-zero exit is a DockerCommandError. */
export function runDocker(args: readonly string[], options: DockerCommandOptions = {}): Promise<string> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_DOCKER_COMMAND_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const child = spawn(options.dockerBinary ?? 'docker', args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(
        new DockerCommandError(args, null, `cannot run the docker CLI: ${error.message}`, { cause: error }),
      );
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      const errorText = Buffer.concat(stderr).toString('utf8');
      if (timedOut) {
        reject(new DockerCommandError(args, null, `timed out after ${timeoutMs} ms ${errorText}`));
      } else if (code === 0) {
        resolve(Buffer.concat(stdout).toString('utf8'));
      } else {
        reject(new DockerCommandError(args, code, errorText));
      }
    });
    // A command that exits without reading its input closes the pipe; the exit status tells why.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input);
  });
}

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** `<machine>:<pid>` of this process: the owner label's value on the containers it makes. */
export function containerOwner(): string {
  return `${hostname()}:${process.pid}`;
}

/**
 * Removes the containers labelled `label` whose owner (`ownerLabel`, a `containerOwner()` value)
 * was a process of this machine that has died without removing them. Another machine's or a live
 * process's containers stay.
 */
export async function removeOrphanedContainers(label: string, ownerLabel: string): Promise<void> {
  const listing = await runDocker([
    'ps',
    '--all',
    '--filter',
    `label=${label}`,
    '--format',
    `{{.ID}} {{.Label "${ownerLabel}"}}`,
  ]);
  const machine = hostname();
  const orphans: string[] = [];
  for (const line of listing.split('\n')) {
    const [id, owner] = line.trim().split(' ');
    if (!id || !owner) continue;
    const separator = owner.lastIndexOf(':');
    const pid = Number(owner.slice(separator + 1));
    if (owner.slice(0, separator) === machine && Number.isInteger(pid) && !isProcessAlive(pid))
      orphans.push(id);
  }
  if (orphans.length > 0) await runDocker(['rm', '--force', '--volumes', ...orphans]).catch(() => undefined);
}
