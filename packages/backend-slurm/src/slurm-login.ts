/**
 * An SSH session on a cluster's login node: where every Slurm command of the backend runs
 * (`sinfo`, `scontrol`, `sbatch`, `squeue`, `scancel`), as dstack's `SlurmClient` does. Scripts
 * run in the user's login shell (`$SHELL -l`), so what a cluster sets up in profiles (modules,
 * `PATH`, `SLURM_CONF`) is there; what the profiles print before the script is cut off at a
 * boundary line, as dstack does.
 */
import { randomBytes } from 'node:crypto';
import { shellQuote } from '@dstack/core';
import { connectSshClient, uploadThroughCat } from '@dstack/runner';
import type ssh2 from 'ssh2';

/** Where and as whom to log in. */
export interface SlurmLogin {
  hostname: string;
  port: number;
  user: string;
  /** OpenSSH or PEM private key. */
  privateKey: string;
}

/** What a script printed and how it exited. */
export interface ExecResult {
  exitStatus: number;
  stdout: string;
  stderr: string;
}

/** Why a login failed: the login node could not be reached, or it refused the key. */
export class SlurmLoginError extends Error {
  override readonly name = 'SlurmLoginError';
  constructor(
    message: string,
    readonly reason: 'unreachable' | 'refused',
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A command on the login node exited non-zero; the message has its output. */
export class SlurmCommandError extends Error {
  override readonly name = 'SlurmCommandError';
  constructor(
    readonly what: string,
    readonly result: ExecResult,
  ) {
    const output = (result.stderr.trim() || result.stdout.trim()).split('\n').slice(-5).join('\n');
    super(
      `${what} failed on the login node (exit status ${result.exitStatus})${output ? `: ${output}` : ''}`,
    );
  }
}

/** Default limit on reaching the login node and finishing the handshake. */
export const DEFAULT_LOGIN_TIMEOUT_MS = 10_000;

export function describeLogin(login: Pick<SlurmLogin, 'hostname' | 'port' | 'user'>): string {
  return `${login.user}@${login.hostname}:${login.port}`;
}

export class SlurmLoginSession {
  #homeDirectory: Promise<string> | undefined;

  private constructor(
    readonly login: SlurmLogin,
    private readonly client: ssh2.Client,
  ) {}

  /** Logs in; throws `SlurmLoginError`. */
  static async open(login: SlurmLogin, timeoutMs = DEFAULT_LOGIN_TIMEOUT_MS): Promise<SlurmLoginSession> {
    const client = await connectSshClient(
      {
        host: login.hostname,
        port: login.port,
        username: login.user,
        privateKey: login.privateKey,
        readyTimeout: timeoutMs,
        // A login node's host key is not configured in dstack's model; dstack connects with
        // paramiko's AutoAddPolicy for the same reason.
        hostVerifier: () => true,
      },
      (cause) => {
        const message = cause instanceof Error ? cause.message : String(cause);
        // ssh2's words for a key the server refused, or one it cannot read.
        const refused = /authentication methods failed|privateKey|Cannot parse/i.test(message);
        return new SlurmLoginError(
          `Cannot log in to the Slurm login node ${describeLogin(login)}: ${message}`,
          refused ? 'refused' : 'unreachable',
          { cause },
        );
      },
    );
    return new SlurmLoginSession(login, client);
  }

  /** Runs `script` in the user's login shell; `input` goes to its standard input. */
  exec(script: string, input?: string): Promise<ExecResult> {
    const boundary = `__dstack_boundary_${randomBytes(8).toString('hex')}__`;
    const wrapped = `echo ${boundary}; echo ${boundary} >&2\n${script}`;
    const command = `exec "\${SHELL:-/bin/sh}" -l -c ${shellQuote(wrapped)}`;
    return new Promise((resolve, reject) => {
      this.client.exec(command, (error, channel) => {
        if (error) {
          reject(error);
          return;
        }
        const stdout: Buffer[] = [];
        const stderr: Buffer[] = [];
        channel.on('data', (chunk: Buffer) => stdout.push(chunk));
        channel.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
        channel.once('close', (code: number | null) => {
          resolve({
            exitStatus: code ?? -1,
            stdout: afterBoundary(Buffer.concat(stdout).toString('utf8'), boundary),
            stderr: afterBoundary(Buffer.concat(stderr).toString('utf8'), boundary),
          });
        });
        channel.end(input ?? '');
      });
    });
  }

  /** Runs `script`; its standard output, or `SlurmCommandError` naming `what` when it fails. */
  async run(what: string, script: string, input?: string): Promise<string> {
    const result = await this.exec(script, input);
    if (result.exitStatus !== 0) throw new SlurmCommandError(what, result);
    return result.stdout;
  }

  /** The user's home directory on the login node (shared with the compute nodes, as on a cluster). */
  homeDirectory(): Promise<string> {
    this.#homeDirectory ??= this.run('reading $HOME', 'printf %s "$HOME"');
    return this.#homeDirectory;
  }

  /** Streams a local file into `remotePath` on the login node (through `cat`: no SFTP needed). */
  upload(localPath: string, remotePath: string): Promise<void> {
    return uploadThroughCat(this.client, localPath, remotePath).catch((error: unknown) => {
      throw new Error(`copying to ${remotePath} failed: ${(error as Error).message}`, { cause: error });
    });
  }

  close(): void {
    this.client.end();
  }
}

function afterBoundary(output: string, boundary: string): string {
  const marker = `${boundary}\n`;
  const at = output.indexOf(marker);
  return at === -1 ? output : output.slice(at + marker.length);
}

/** Opens a session, runs `body` with it, and closes it. */
export async function withLoginSession<T>(
  login: SlurmLogin,
  body: (session: SlurmLoginSession) => Promise<T>,
  timeoutMs?: number,
): Promise<T> {
  const session = await SlurmLoginSession.open(login, timeoutMs);
  try {
    return await body(session);
  } finally {
    session.close();
  }
}
