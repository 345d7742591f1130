/**
 * The first step of deploying an SSH fleet host (dstack's remote instances):
 * log in with the fleet's key (through the host's `proxy_jump` when it has one)
 * and read what the host has — CPUs, memory, root disk, architecture, NVIDIA
 * GPUs (through `nvidia-smi` when present) and whether Node.js is installed for
 * the shim. A host (or proxy) that cannot be reached or refuses the key fails
 * with an `SshHostProbeError` naming it and why, so the fleet service can name
 * the offending configuration field.
 */
import type ssh2 from 'ssh2';
import { connectSshClientThrough, type SshLogin } from './ssh-client.js';

/** Where and how to log in: a fleet host, or the jump host in front of one. */
export interface SshLoginAddress {
  hostname: string;
  /** Default 22. */
  port: number;
  username: string;
  /** The private key's content (the CLI sends the file's content, as dstack's does). */
  privateKey: string;
}

export interface SshHostAddress extends SshLoginAddress {
  /** The jump host the host is reached through (`proxy_jump`, `ssh -J`); none when absent. */
  proxy?: SshLoginAddress;
}

export interface HostGpu {
  name: string;
  memory_mib: number;
  vendor: 'nvidia';
}

export interface HostResources {
  cpus: number;
  memory_mib: number;
  /** Size of the filesystem holding `/`. */
  disk_mib: number;
  cpu_arch: 'x86' | 'arm';
  gpus: HostGpu[];
}

export type SshHostProbeFailure = 'unreachable' | 'authentication' | 'check';

export class SshHostProbeError extends Error {
  override readonly name = 'SshHostProbeError';
  /** Which login failed: the host's own, or its `proxy_jump`'s. */
  readonly hop: 'host' | 'proxy';
  constructor(
    message: string,
    readonly host: string,
    readonly reason: SshHostProbeFailure,
    options: { cause?: unknown; hop?: 'host' | 'proxy' } = {},
  ) {
    super(message, { cause: options.cause });
    this.hop = options.hop ?? 'host';
  }
}

/** Default limit on reaching the host and finishing the handshake (dstack: 3 s; hosts may be slower to answer a new login). */
export const DEFAULT_SSH_HOST_CONNECT_TIMEOUT_MS = 10_000;

/** One line of `key=value` per fact; GPUs one `gpu=` line each. POSIX sh, no bashisms. */
const PROBE_SCRIPT = [
  'echo "cpus=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)"',
  `echo "memory_kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"`,
  `echo "disk_kib=$(df -Pk / | awk 'NR==2 {print $2}')"`,
  'echo "arch=$(uname -m)"',
  'if command -v nvidia-smi >/dev/null 2>&1; then',
  "  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits | sed 's/^/gpu=/'",
  'fi',
].join('\n');

/** `user@host:port`, for messages. */
export function describeHost(address: Pick<SshLoginAddress, 'hostname' | 'port' | 'username'>): string {
  return `${address.username}@${address.hostname}:${address.port}`;
}

function isAuthenticationFailure(error: unknown): boolean {
  const level = (error as { level?: string }).level;
  return level === 'client-authentication' || /authentication|key/i.test(String((error as Error).message));
}

function hostLogin(address: SshLoginAddress, hop: 'host' | 'proxy', connectTimeoutMs: number): SshLogin {
  return {
    config: {
      host: address.hostname,
      port: address.port,
      username: address.username,
      privateKey: address.privateKey,
      readyTimeout: connectTimeoutMs,
      // The user names the host; dstack connects to fleet hosts with StrictHostKeyChecking=no too.
      hostVerifier: () => true,
    },
    describeFailure: (cause) => {
      // A key ssh2 cannot parse (thrown synchronously, "Cannot parse privateKey") counts as refused too.
      const reason = isAuthenticationFailure(cause) ? 'authentication' : 'unreachable';
      const what = reason === 'authentication' ? 'refused the key' : 'cannot be reached';
      return new SshHostProbeError(
        `SSH ${hop} ${describeHost(address)} ${what}: ${(cause as Error).message ?? String(cause)}`,
        address.hostname,
        reason,
        { cause, hop },
      );
    },
  };
}

/** Logs in (through the host's proxy, if any) and returns an authenticated client; the caller ends it. */
export function connectToHost(
  address: SshHostAddress,
  connectTimeoutMs = DEFAULT_SSH_HOST_CONNECT_TIMEOUT_MS,
): Promise<ssh2.Client> {
  return connectSshClientThrough(
    hostLogin(address, 'host', connectTimeoutMs),
    address.proxy === undefined ? null : hostLogin(address.proxy, 'proxy', connectTimeoutMs),
  );
}

/**
 * Runs `command` and resolves with its stdout; a non-zero exit rejects with its stderr.
 * `input`, when given, is written to the command's standard input, which is then closed.
 */
export function execOnHost(client: ssh2.Client, command: string, input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    client.exec(command, (error, stream) => {
      if (error) {
        reject(error);
        return;
      }
      if (input !== undefined) stream.end(input);
      let stdout = '';
      let stderr = '';
      stream.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
      });
      stream.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
      });
      stream.on('close', (code: number | null) => {
        if (code === 0) resolve(stdout);
        else reject(new Error(`exit status ${code}: ${stderr.trim() || stdout.trim()}`));
      });
    });
  });
}

function architectureOf(machine: string): 'x86' | 'arm' {
  return /^(aarch64|arm)/.test(machine) ? 'arm' : 'x86';
}

/** Parses the probe script's output. */
export function parseHostProbe(output: string): HostResources {
  const values = new Map<string, string>();
  const gpus: HostGpu[] = [];
  for (const line of output.split('\n')) {
    const separator = line.indexOf('=');
    if (separator < 0) continue;
    const key = line.slice(0, separator);
    const value = line.slice(separator + 1).trim();
    if (key === 'gpu') {
      const [name, memory] = value.split(',').map((part) => part.trim());
      if (name)
        gpus.push({
          name: name.replace(/^NVIDIA\s+/, ''),
          memory_mib: Number(memory) || 0,
          vendor: 'nvidia',
        });
    } else values.set(key, value);
  }
  const number = (key: string): number => {
    const parsed = Number(values.get(key));
    if (!Number.isFinite(parsed) || parsed <= 0) throw new Error(`the host did not report ${key}`);
    return parsed;
  };
  return {
    cpus: number('cpus'),
    memory_mib: Math.floor(number('memory_kib') / 1024),
    disk_mib: Math.floor(number('disk_kib') / 1024),
    cpu_arch: architectureOf(values.get('arch') ?? ''),
    gpus,
  };
}

/** Reads the resources of a host the caller is logged in to (the deploy reuses its login). */
export async function probeConnectedHost(
  client: ssh2.Client,
  address: SshHostAddress,
): Promise<HostResources> {
  try {
    return parseHostProbe(await execOnHost(client, PROBE_SCRIPT));
  } catch (error) {
    throw new SshHostProbeError(
      `Checking SSH host ${describeHost(address)} failed: ${(error as Error).message}`,
      address.hostname,
      'check',
      { cause: error },
    );
  }
}

/** Logs in to the host and reads its resources. */
export async function probeSshHost(
  address: SshHostAddress,
  connectTimeoutMs = DEFAULT_SSH_HOST_CONNECT_TIMEOUT_MS,
): Promise<HostResources> {
  const client = await connectToHost(address, connectTimeoutMs);
  try {
    return await probeConnectedHost(client, address);
  } finally {
    client.end();
  }
}
