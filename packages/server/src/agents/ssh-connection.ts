import type { Duplex } from 'node:stream';
import type ssh2 from 'ssh2';
import type { ClientChannel, ConnectConfig } from 'ssh2';
import { AgentUnreachableError } from './agent-unreachable-error.js';
import { connectSshClient } from './ssh-client.js';

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
  /** OpenSSH or PEM private key, used for the proxy and the target alike. */
  privateKey: string;
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
    private readonly client: ssh2.Client,
    private readonly proxyClient: ssh2.Client | null,
  ) {
    for (const each of [client, proxyClient]) {
      each?.on('close', () => this.close());
      each?.on('end', () => this.close());
    }
  }

  /**
   * Connects and authenticates. Throws `AgentUnreachableError` naming the host
   * (the proxy's or the target's) that could not be reached or refused the key.
   */
  static async open(options: OpenSshConnectionOptions): Promise<SshConnection> {
    const { target, proxy, privateKey, connectTimeoutMs } = options;
    if (proxy === null) {
      const client = await connectClient(target, { privateKey, connectTimeoutMs });
      return new SshConnection(target, client, null);
    }
    const proxyClient = await connectClient(proxy, { privateKey, connectTimeoutMs });
    try {
      const stream = await openChannel(proxyClient, target.hostname, target.port).catch((error: unknown) => {
        throw new AgentUnreachableError(
          `Cannot reach ${describeTarget(target)} through the SSH proxy ${describeTarget(proxy)}: ${messageOf(error)}`,
          { host: target.hostname, port: target.port, cause: error },
        );
      });
      const client = await connectClient(target, { privateKey, connectTimeoutMs, sock: stream });
      return new SshConnection(target, client, proxyClient);
    } catch (error) {
      proxyClient.end();
      throw error;
    }
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
    return openChannel(this.client, '127.0.0.1', remotePort);
  }

  close(): void {
    if (!this.#open) return;
    this.#open = false;
    this.client.end();
    this.proxyClient?.end();
    for (const listener of this.#closeListeners) listener();
    this.#closeListeners.clear();
  }
}

function connectClient(
  target: SshTarget,
  options: { privateKey: string; connectTimeoutMs: number; sock?: Duplex },
): Promise<ssh2.Client> {
  const config: ConnectConfig = {
    host: target.hostname,
    port: target.port,
    username: target.username,
    privateKey: options.privateKey,
    readyTimeout: options.connectTimeoutMs,
    keepaliveInterval: KEEPALIVE_INTERVAL_MS,
    keepaliveCountMax: KEEPALIVE_COUNT_MAX,
    // Instances are created fresh with unknown host keys; dstack connects with
    // StrictHostKeyChecking=no for the same reason.
    hostVerifier: () => true,
    ...(options.sock ? { sock: options.sock } : {}),
  };
  return connectSshClient(
    config,
    (cause) =>
      new AgentUnreachableError(`Cannot connect over SSH to ${describeTarget(target)}: ${messageOf(cause)}`, {
        host: target.hostname,
        port: target.port,
        cause,
      }),
  );
}

function openChannel(client: ssh2.Client, host: string, port: number): Promise<ClientChannel> {
  return new Promise((resolve, reject) => {
    client.forwardOut('127.0.0.1', 0, host, port, (error, channel) => {
      if (error) reject(error);
      else resolve(channel);
    });
  });
}

export function describeTarget(target: SshTarget): string {
  return `${target.username}@${target.hostname}:${target.port}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
