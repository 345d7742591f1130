import type { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { CommandError } from '../output/command-error.js';
import { connect, type ProjectOption } from './connect.js';

export interface SshProxyOptions extends ProjectOption {
  /** The job number (`--job`). Default 0. */
  job?: string;
  /** The replica number (`--replica`). Default 0. */
  replica?: string;
}

/** The process's standard streams, or pipes in tests. */
export interface ProxyStreams {
  input: Readable;
  output: Writable;
}

function readIndex(value: string | undefined, option: string): number {
  if (value === undefined) return 0;
  const index = Number(value);
  if (!Number.isInteger(index) || index < 0) {
    throw new CommandError(`${option}: expected a number >= 0, got '${value}'`);
  }
  return index;
}

/**
 * Moves bytes both ways until the server's side closes. The end of `input` (OpenSSH closing
 * the ProxyCommand's stdin) is passed on as a half-close; the server then closes its side.
 */
function pipeUntilClosed(socket: Socket, streams: ProxyStreams): Promise<void> {
  return new Promise((resolve) => {
    streams.input.pipe(socket);
    socket.pipe(streams.output);
    socket.on('error', () => socket.destroy());
    socket.once('close', () => {
      // Nothing more is wanted from stdin, and reading it would keep the process alive.
      streams.input.unpipe(socket);
      streams.input.destroy();
      resolve();
    });
  });
}

/**
 * `dstack ssh-proxy RUN`: OpenSSH's ProxyCommand for `ssh RUN`. Opens the server's SSH tunnel
 * to the job and joins it to stdin/stdout. A refusal (no such run, not running yet, bad token)
 * is reported on stderr like any server error, with exit code 1.
 */
export async function sshProxyCommand(
  runName: string,
  options: SshProxyOptions,
  streams: ProxyStreams,
): Promise<number> {
  const jobNum = readIndex(options.job, '--job');
  const replicaNum = readIndex(options.replica, '--replica');
  const client = await connect(options);
  const socket = await client.openSshTunnel(runName, { jobNum, replicaNum });
  await pipeUntilClosed(socket, streams);
  return 0;
}
