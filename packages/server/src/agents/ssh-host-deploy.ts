/**
 * Deploying an SSH fleet host (dstack's remote instance): log in with the fleet's key, read
 * the host's resources, copy the agent runtime (node with its own loader and libraries, the shim
 * and the runner; `agent-runtime-archive.ts`) to the host unless it has it already, start the
 * shim from it, detached and through the runtime's loader (the host needs no node: a POSIX shell
 * and tar), in a home directory of its own, and wait until it announces its port in
 * `<home>/shim.json`. The shim runs as root, as dstack's does (its jobs' containers write root's
 * files into its home, and a host's Docker is root's): a user other than root needs passwordless
 * sudo. Stopping undoes it: the shim is stopped by the pid the deploy recorded (only while that
 * pid is still our shim) and its home removed; the host itself stays, and so does the runtime,
 * for the next deploy.
 */
import { AGENT_RUNTIME_SHIM_FILE, shellQuote } from '@dstack/core';
import { RUNTIME_ARCHIVE_ROOT, runtimeNodeCommand, uploadThroughCat } from '@dstack/runner';
import type ssh2 from 'ssh2';
import type { AgentRuntimeArchive } from './agent-runtime-archive.js';
import {
  connectToHost,
  DEFAULT_SSH_HOST_CONNECT_TIMEOUT_MS,
  describeHost,
  execOnHost,
  type HostResources,
  probeConnectedHost,
  type SshHostAddress,
  SshHostProbeError,
} from './ssh-host-probe.js';

/** How long a started shim gets to write `shim.json`. Default 30 s. */
export const DEFAULT_SHIM_START_TIMEOUT_MS = 30_000;
/** How long a stopped shim gets to end its tasks before it is killed. Default 10 s (the local backend's grace). */
export const DEFAULT_SHIM_STOP_GRACE_MS = 10_000;
const SHIM_STATE_POLL_MS = 200;
const TOKEN_FILE_NAME = 'shim-token';
/** Where hosts keep agent runtimes, one directory per runtime key, relative to the user's home. */
export const DEFAULT_HOST_AGENT_RUNTIME_DIR = '.dstack/agent-runtime';

export interface DeployShimOptions {
  /** The agent runtime to start the shim from (`localAgentRuntime()`). */
  agentRuntime: AgentRuntimeArchive;
  /** Where the host keeps runtimes, absolute or relative to the user's home. Default `DEFAULT_HOST_AGENT_RUNTIME_DIR`. */
  agentRuntimeDir?: string;
  /**
   * The shim's home on the host, absolute or relative to the user's home directory;
   * created if missing. One per instance: stopping removes it.
   */
  homeDir: string;
  /**
   * How the shim runs jobs: `auto` runs them in their images where the host's Docker daemon
   * answers (as dstack's SSH fleets do) and as processes, refusing images, where it does not.
   */
  runtime: 'process' | 'auto';
  /**
   * The instance's agent token: written to `<home>/shim-token` (mode 0600, sent over the SSH
   * channel's input, never in a command line) and given to the shim as `--token-file`.
   */
  token: string;
  connectTimeoutMs?: number;
  startTimeoutMs?: number;
}

export interface DeployedShim {
  resources: HostResources;
  /** Absolute path of the shim's home on the host. */
  home: string;
  pid: number;
  /** The port the shim listens on (host loopback). */
  port: number;
}

/** Where a deployed shim is, for stopping it. */
export interface ShimLocation {
  home: string;
  pid: number;
}

function checkFailure(address: SshHostAddress, message: string, cause?: unknown): SshHostProbeError {
  return new SshHostProbeError(
    `Deploying to SSH host ${describeHost(address)} failed: ${message}`,
    address.hostname,
    'check',
    { cause },
  );
}

function uploadOverSftp(client: ssh2.Client, localPath: string, remotePath: string): Promise<void> {
  return new Promise((resolve, reject) => {
    client.sftp((error, sftp) => {
      if (error) {
        reject(Object.assign(error, { sftpUnavailable: true }));
        return;
      }
      sftp.fastPut(localPath, remotePath, { mode: 0o755 }, (putError) => {
        sftp.end();
        if (putError) reject(putError);
        else resolve();
      });
    });
  });
}

/** Copies one file to the host over SFTP, or through `cat` when the host offers no SFTP. */
async function uploadFile(client: ssh2.Client, localPath: string, remotePath: string): Promise<void> {
  try {
    await uploadOverSftp(client, localPath, remotePath);
  } catch (error) {
    if (!(error as { sftpUnavailable?: boolean }).sftpUnavailable) throw error;
    await uploadThroughCat(client, localPath, remotePath, { executable: true });
  }
}

/** A shell test that the pid is still the shim of `home`: pids are reused, and a zombie has no command line. */
function isOurShimScript(home: string, pid: number): string {
  return `tr '\\0' '\\n' 2>/dev/null < /proc/${pid}/cmdline | grep -qxF -- ${shellQuote(home)}`;
}

async function readShimState(
  client: ssh2.Client,
  home: string,
): Promise<{ pid: number; port: number } | null> {
  const text = await execOnHost(client, `cat ${shellQuote(`${home}/shim.json`)} 2>/dev/null || true`);
  if (text.trim() === '') return null;
  try {
    const state = JSON.parse(text) as { pid?: unknown; http_port?: unknown };
    return Number.isInteger(state.pid) && Number.isInteger(state.http_port)
      ? { pid: state.pid as number, port: state.http_port as number }
      : null;
  } catch {
    // Written by rename, so a partial file is not expected; treat it as not yet written.
    return null;
  }
}

async function waitForShim(
  client: ssh2.Client,
  address: SshHostAddress,
  home: string,
  pid: number,
  timeoutMs: number,
): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await readShimState(client, home);
    if (state !== null) return state.port;
    const alive = await execOnHost(client, `${isOurShimScript(home, pid)} && echo yes || echo no`);
    if (alive.trim() !== 'yes' || Date.now() > deadline) {
      const log = await execOnHost(
        client,
        `tail -n 20 ${shellQuote(`${home}/shim.log`)} 2>/dev/null || true`,
      );
      const what =
        alive.trim() !== 'yes' ? 'exited before it listened' : `did not listen within ${timeoutMs} ms`;
      throw checkFailure(
        address,
        `the shim (pid ${pid}) ${what}${log.trim() ? `; shim.log ends:\n${log.trim()}` : ''}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, SHIM_STATE_POLL_MS));
  }
}

/**
 * How to run a script as root on the host: as it is for root, through `sudo -n` for another user
 * with passwordless sudo; null when the user has neither.
 */
async function rootShell(client: ssh2.Client): Promise<((script: string) => string) | null> {
  const answer = await execOnHost(client, 'id -u; if sudo -n true 2>/dev/null; then echo sudo; fi');
  const [uid, sudo] = answer.trim().split('\n');
  if (uid === '0') return (script) => script;
  return sudo === 'sudo' ? (script) => `sudo -n sh -c ${shellQuote(script)}` : null;
}

async function stopShimWith(client: ssh2.Client, location: ShimLocation, graceMs: number): Promise<void> {
  const { home, pid } = location;
  const asRoot = (await rootShell(client)) ?? ((script: string) => script);
  const tries = Math.max(1, Math.ceil(graceMs / 100));
  const script = [
    `if ${isOurShimScript(home, pid)}; then`,
    `  kill ${pid} 2>/dev/null`,
    '  i=0',
    `  while ${isOurShimScript(home, pid)} && [ "$i" -lt ${tries} ]; do sleep 0.1; i=$((i+1)); done`,
    `  if ${isOurShimScript(home, pid)}; then kill -9 ${pid} 2>/dev/null; fi`,
    'fi',
    `rm -rf -- ${shellQuote(home)}`,
  ].join('\n');
  await execOnHost(client, asRoot(script));
}

/**
 * Puts the agent runtime on the host unless it has it (`<runtimes>/<key>/installed`): uploaded
 * next to its place, unpacked, made executable (archives may drop execute bits) and renamed into
 * place, so a deploy beside it never sees half a runtime. Resolves with the runtime's absolute root.
 */
async function installAgentRuntime(
  client: ssh2.Client,
  address: SshHostAddress,
  resources: HostResources,
  options: DeployShimOptions,
): Promise<string> {
  const { agentRuntime } = options;
  const machine = agentRuntime.manifest.machine;
  if (resources.cpu_arch !== (machine === 'x86_64' ? 'x86' : 'arm')) {
    throw checkFailure(
      address,
      `the host's CPU is ${resources.cpu_arch}, and the agent runtime this server has is for ${machine}`,
    );
  }
  const runtimes = options.agentRuntimeDir ?? DEFAULT_HOST_AGENT_RUNTIME_DIR;
  const located = await execOnHost(
    client,
    `mkdir -p ${shellQuote(runtimes)} && cd ${shellQuote(runtimes)} && pwd && { [ -f ${agentRuntime.key}/installed ] && echo installed || true; }`,
  ).catch((error: unknown) => {
    throw checkFailure(address, `cannot create ${runtimes}: ${(error as Error).message}`, error);
  });
  const [directory = '', state] = located.trim().split('\n');
  const target = `${directory}/${agentRuntime.key}`;
  const root = `${target}/${RUNTIME_ARCHIVE_ROOT}`;
  if (state === 'installed') return root;
  const staging = `${target}.${process.pid}-${Date.now()}`;
  await uploadFile(client, agentRuntime.path, `${staging}.tar.gz`).catch((error: unknown) => {
    throw checkFailure(
      address,
      `copying the agent runtime to ${staging}.tar.gz failed: ${(error as Error).message}`,
      error,
    );
  });
  const unpack = [
    `s=${shellQuote(staging)} t=${shellQuote(target)}`,
    'trap \'rm -rf "$s" "$s.tar.gz"\' EXIT',
    'mkdir -p "$s" && tar -xzf "$s.tar.gz" -C "$s" || exit 1',
    `chmod 0755 "$s/${RUNTIME_ARCHIVE_ROOT}/bin/node" "$s/${RUNTIME_ARCHIVE_ROOT}"/lib/* || exit 1`,
    'touch "$s/installed" && { [ -f "$t/installed" ] || { rm -rf "$t" && mv "$s" "$t"; }; }',
  ].join('\n');
  await execOnHost(client, unpack).catch((error: unknown) => {
    throw checkFailure(
      address,
      `unpacking the agent runtime in ${directory} failed: ${(error as Error).message}`,
      error,
    );
  });
  return root;
}

/** Deploys and starts the shim; on any failure after login, removes what it left on the host. */
export async function deployShim(address: SshHostAddress, options: DeployShimOptions): Promise<DeployedShim> {
  const client = await connectToHost(
    address,
    options.connectTimeoutMs ?? DEFAULT_SSH_HOST_CONNECT_TIMEOUT_MS,
  );
  let location: ShimLocation | null = null;
  let home: string | null = null;
  try {
    const resources = await probeConnectedHost(client, address);
    const asRoot = await rootShell(client);
    if (asRoot === null) {
      throw checkFailure(
        address,
        `${address.username} is not root and cannot use sudo without a password; the shim runs as root`,
      );
    }
    const root = await installAgentRuntime(client, address, resources, options);
    const created = await execOnHost(
      client,
      `mkdir -p ${shellQuote(options.homeDir)} && cd ${shellQuote(options.homeDir)} && pwd`,
    ).catch((error: unknown) => {
      throw checkFailure(address, `cannot create ${options.homeDir}: ${(error as Error).message}`, error);
    });
    home = created.trim();
    const tokenPath = `${home}/${TOKEN_FILE_NAME}`;
    // Through the channel's input: a command line would show the token to every user of the host.
    await execOnHost(
      client,
      `umask 077 && cat > ${shellQuote(tokenPath)} && chmod 600 ${shellQuote(tokenPath)}`,
      options.token,
    ).catch((error: unknown) => {
      throw checkFailure(address, `writing ${tokenPath} failed: ${(error as Error).message}`, error);
    });
    // Only the shim goes to the background, with every descriptor away from the SSH channel;
    // otherwise the channel (and this exec) stays open as long as the shim runs. Its Docker
    // runtime mounts the same agent runtime into containers (`--runner-runtime`).
    const node = runtimeNodeCommand(options.agentRuntime.manifest, root).map(shellQuote).join(' ');
    const start = [
      `cd ${shellQuote(home)} || exit 1`,
      `nohup ${node} ${shellQuote(`${root}/${AGENT_RUNTIME_SHIM_FILE}`)} --http-port 0 --home ${shellQuote(home)}` +
        ` --runtime ${options.runtime} --runner-runtime ${shellQuote(root)} --token-file ${shellQuote(tokenPath)}` +
        ` > ${shellQuote(`${home}/shim.log`)} 2>&1 < /dev/null &`,
      'echo $!',
    ].join('\n');
    const pid = Number((await execOnHost(client, asRoot(start))).trim());
    if (!Number.isInteger(pid) || pid <= 0) throw checkFailure(address, 'the shim did not start');
    location = { home, pid };
    const port = await waitForShim(
      client,
      address,
      home,
      pid,
      options.startTimeoutMs ?? DEFAULT_SHIM_START_TIMEOUT_MS,
    );
    return { resources, home, pid, port };
  } catch (error) {
    if (home !== null) {
      await stopShimWith(client, location ?? { home, pid: 0 }, 0).catch(() => undefined);
    }
    throw error;
  } finally {
    client.end();
  }
}

/** Stops a deployed shim (SIGTERM, then SIGKILL after `graceMs`) and removes its home. */
export async function stopDeployedShim(
  address: SshHostAddress,
  location: ShimLocation,
  options: { connectTimeoutMs?: number; graceMs?: number } = {},
): Promise<void> {
  const client = await connectToHost(
    address,
    options.connectTimeoutMs ?? DEFAULT_SSH_HOST_CONNECT_TIMEOUT_MS,
  );
  try {
    await stopShimWith(client, location, options.graceMs ?? DEFAULT_SHIM_STOP_GRACE_MS);
  } finally {
    client.end();
  }
}
