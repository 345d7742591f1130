import type ssh2 from 'ssh2';
import type { ClientChannel } from 'ssh2';
import { AgentUnreachableError } from './agent-unreachable-error.js';
import { connectSshClientThrough, forwardOut, type SshLogin } from './ssh-client.js';

/** Where an SSH connection goes: `username@hostname:port`. */
export interface SshTarget {
  hostname: string;
  port: number;
  username: string;
}

export interface OpenSshConnectionOptions {
  target: SshTarget;
  /** A jump host to go through (`ssh -J`); null for a direct connection. */
  proxy: SshTarget | null;
  /** OpenSSH or PEM private key of the target, and of the proxy unless it has its own. */
  privateKey: string;
  /** The proxy's own key (an SSH fleet's `proxy_jump`); default `privateKey`. */
  proxyPrivateKey?: string;
  /** Limit on reaching each host and finishing the SSH handshake. */
  connectTimeoutMs: number;
}

/** Keepalives detect a dead peer (instance gone, network cut) so the pool can reconnect. */
const KEEPALIVE_INTERVAL_MS = 15_000;
const KEEPALIVE_COUNT_MAX = 3;

/**
 * An authenticated SSH session to a target, possibly through a jump host, that
 * opens TCP channels to ports on the target's loopback (`ssh -L`). Once closed
 * (by `close()`, by either peer, or by a network error) it stays closed; the
 * owner opens a new one.
 */
export class SshConnection {
  #open = true;
  readonly #closeListeners = new Set<() => void>();

  private constructor(
    readonly target: SshTarget,
    /** Owns the proxy's session when there is one: ending either ends both. */
    private readonly client: ssh2.Client,
  ) {
    client.on('close', () => this.close());
    client.on('end', () => this.close());
  }

  /**
   * Connects and authenticates. Throws `AgentUnreachableError` naming the host
   * (the proxy's or the target's) that could not be reached or refused the key.
   */
  static async open(options: OpenSshConnectionOptions): Promise<SshConnection> {
    const { target, proxy, privateKey, connectTimeoutMs } = options;
    const client = await connectSshClientThrough(
      sshLogin(target, privateKey, connectTimeoutMs),
      proxy === null ? null : sshLogin(proxy, options.proxyPrivateKey ?? privateKey, connectTimeoutMs),
    );
    return new SshConnection(target, client);
  }

  get isOpen(): boolean {
    return this.#open;
  }

  /** Calls `listener` once, when the connection closes for any reason. */
  onClose(listener: () => void): void {
    if (!this.#open) listener();
    else this.#closeListeners.add(listener);
  }

  /** Opens a channel to `127.0.0.1:remotePort` as seen from the target. */
  forwardToLoopback(remotePort: number): Promise<ClientChannel> {
    if (!this.#open) {
      return Promise.reject(
        new AgentUnreachableError(`The SSH connection to ${describeTarget(this.target)} is closed`, {
          host: this.target.hostname,
          port: this.target.port,
        }),
      );
    }
    return forwardOut(this.client, '127.0.0.1', remotePort);
  }

  close(): void {
    if (!this.#open) return;
    this.#open = false;
    this.client.end();
    for (const listener of this.#closeListeners) listener();
    this.#closeListeners.clear();
  }
}

function sshLogin(target: SshTarget, privateKey: string, connectTimeoutMs: number): SshLogin {
  return {
    config: {
      host: target.hostname,
      port: target.port,
      username: target.username,
      privateKey,
      readyTimeout: connectTimeoutMs,
      keepaliveInterval: KEEPALIVE_INTERVAL_MS,
      keepaliveCountMax: KEEPALIVE_COUNT_MAX,
      // Instances are created fresh with unknown host keys; dstack connects with
      // StrictHostKeyChecking=no for the same reason.
      hostVerifier: () => true,
    },
    describeFailure: (cause) =>
      new AgentUnreachableError(`Cannot connect over SSH to ${describeTarget(target)}: ${messageOf(cause)}`, {
        host: target.hostname,
        port: target.port,
        cause,
      }),
  };
}

export function describeTarget(target: SshTarget): string {
  return `${target.username}@${target.hostname}:${target.port}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
