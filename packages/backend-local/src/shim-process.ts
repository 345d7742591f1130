import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pickEnvironmentVariables, SHIM_TOKEN_ENV } from '@dstack/core/agent-protocol';
import type { LocalRuntime } from './local-config.js';

/** What the shim writes to `<home>/shim.json` once it listens. */
export interface ShimState {
  pid: number;
  http_port: number;
  version?: string;
  runtime?: string;
}

export const SHIM_STATE_FILE = 'shim.json';
export const SHIM_LOG_FILE = 'shim.log';

export interface SpawnShimOptions {
  /** `dist/bin/dstack-shim.js` of @dstack/shim. */
  shimBinPath: string;
  /** The instance home: the shim's state, its tasks and its log live there. */
  home: string;
  runtime: LocalRuntime;
  /** The host's GPUs (NVIDIA indices) the shim may hand out to its tasks; default every GPU. */
  gpuIds?: readonly string[];
  /**
   * The instance's agent token: the shim answers only requests that carry it. Passed in the
   * shim's environment (`DSTACK_SHIM_TOKEN`), which only its own user can read, not on its
   * command line, which every user can.
   */
  token: string;
}

/**
 * Starts a shim in its own session (detached, its output in `<home>/shim.log`),
 * so it and its jobs survive a restart of the server that started it.
 * Returns its pid; the shim announces its port later in `<home>/shim.json`.
 */
export function spawnDetachedShim(options: SpawnShimOptions): number {
  const logFd = openSync(join(options.home, SHIM_LOG_FILE), 'a');
  try {
    const child = spawn(
      process.execPath,
      [
        options.shimBinPath,
        ...['--http-port', '0', '--home', options.home, '--runtime', options.runtime],
        ...(options.gpuIds ? [`--gpu-ids=${options.gpuIds.join(',')}`] : []),
      ],
      {
        detached: true,
        stdio: ['ignore', logFd, logFd],
        cwd: options.home,
        env: { ...shimEnvironment(process.env), [SHIM_TOKEN_ENV]: options.token },
      },
    );
    // Spawn failures (a missing node binary) arrive as an event; the pid tells us synchronously.
    child.on('error', () => {});
    child.unref();
    if (child.pid === undefined) throw new Error(`Cannot start the shim ${options.shimBinPath}`);
    return child.pid;
  } finally {
    closeSync(logFd);
  }
}

/**
 * The server's variables the shim needs, and nothing else of the server's environment (its admin
 * token, database URL, cloud credentials): the shim's process runtime runs jobs beside it, and
 * whatever the shim holds is one bug away from a job. It needs:
 * - `PATH`: the programs it and its jobs run (`sh`, `git`, `tar`, `nvidia-smi`);
 * - `LD_LIBRARY_PATH`: how this host's node (the shim's) finds its libraries, when it needs it;
 * - `HOME`, `USER`, `LOGNAME`, `SHELL`, `TMPDIR`: who it runs as and where its files go, which jobs
 *   of the process runtime inherit too;
 * - `LANG`, `LANGUAGE`, `LC_ALL`, `TZ`, `TERM`: the locale, time zone and terminal the jobs inherit;
 * - `XDG_CACHE_HOME`: where the Docker runtime caches the runner's portable runtime;
 * - `DOCKER_HOST`: the Docker daemon the Docker runtime talks to.
 */
export const SHIM_ENVIRONMENT_VARIABLES = [
  'PATH',
  'LD_LIBRARY_PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'TMPDIR',
  'LANG',
  'LANGUAGE',
  'LC_ALL',
  'TZ',
  'TERM',
  'XDG_CACHE_HOME',
  'DOCKER_HOST',
] as const;

/** The {@link SHIM_ENVIRONMENT_VARIABLES} of `serverEnv` (the ones it sets). */
export function shimEnvironment(
  serverEnv: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  return pickEnvironmentVariables(serverEnv, SHIM_ENVIRONMENT_VARIABLES);
}

/** `<home>/shim.json`, or null while the shim has not written it (or wrote it partly). */
export async function readShimState(home: string): Promise<ShimState | null> {
  let text: string;
  try {
    text = await readFile(join(home, SHIM_STATE_FILE), 'utf8');
  } catch {
    return null;
  }
  try {
    const state = JSON.parse(text) as Partial<ShimState>;
    return Number.isInteger(state.http_port) && Number.isInteger(state.pid) ? (state as ShimState) : null;
  } catch {
    return null;
  }
}

/**
 * Whether `pid` is still the shim of `home`. Pids are reused, so a live pid is
 * ours only when its command line names our home directory; a zombie has an
 * empty command line and counts as gone.
 */
export async function isShimProcess(pid: number, home: string): Promise<boolean> {
  try {
    const commandLine = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    return commandLine.split('\0').includes(home);
  } catch {
    return false;
  }
}

/** The last `count` lines of the shim's log, for error messages. */
export async function shimLogTail(home: string, count = 20): Promise<string> {
  try {
    const text = await readFile(join(home, SHIM_LOG_FILE), 'utf8');
    return text.trimEnd().split('\n').slice(-count).join('\n');
  } catch {
    return '';
  }
}

/**
 * Stops the shim of `home`: SIGTERM (it stops its tasks and exits), then,
 * after `graceMs`, SIGKILL to its whole process group, which takes its task
 * processes along. Does nothing when `pid` is no longer that shim.
 */
export async function stopShim(pid: number, home: string, graceMs = 10_000): Promise<void> {
  if (!(await isShimProcess(pid, home))) return;
  signal(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!(await isShimProcess(pid, home))) return;
    await sleep(100);
  }
  // Detached: the shim leads its own process group.
  signal(-pid, 'SIGKILL');
  const killDeadline = Date.now() + 5_000;
  while (Date.now() < killDeadline && (await isShimProcess(pid, home))) await sleep(50);
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (error) {
    // ESRCH: gone in the meantime, which is what we want.
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}
