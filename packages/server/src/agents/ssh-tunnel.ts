import { LocalPortForward } from './local-port-forward.js';
import { SshConnection, type SshTarget } from './ssh-connection.js';

export interface SshTunnelOptions {
  target: SshTarget;
  proxy: SshTarget | null;
  connectTimeoutMs: number;
  /** Closes itself after this long without requests and without open connections. */
  idleTimeoutMs: number;
  /** Called once the tunnel closed itself for idleness, so the owner can forget it. */
  onIdleClose: () => void;
}

/**
 * One pooled SSH connection to a host and its local port forwards, one per
 * remote port. The forwards outlive the connection: when it drops (instance
 * rebooted, network cut), the next request through a forward reconnects, so
 * URLs handed out stay valid until the tunnel idles out.
 */
export class SshTunnel {
  #connection: SshConnection | null = null;
  #connecting: Promise<SshConnection> | null = null;
  readonly #forwards = new Map<number, Promise<LocalPortForward>>();
  #privateKey = '';
  #proxyPrivateKey: string | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  /** `localPortFor` calls in progress; a tunnel being connected is not idle. */
  #pendingRequests = 0;
  #closed = false;

  constructor(private readonly options: SshTunnelOptions) {}

  /**
   * Connects (or reuses the connection) and returns the local port that leads
   * to `remotePort` on the target's loopback. Throws `AgentUnreachableError`
   * when the SSH connection cannot be made. `proxyPrivateKey` is the proxy's own key
   * (an SSH fleet's `proxy_jump`); without it the proxy is logged in to with `privateKey`.
   */
  async localPortFor(remotePort: number, privateKey: string, proxyPrivateKey?: string): Promise<number> {
    // The project key may have been rotated; reconnects use the newest one.
    this.#privateKey = privateKey;
    this.#proxyPrivateKey = proxyPrivateKey;
    this.#pendingRequests += 1;
    try {
      await this.#connected();
      let forward = this.#forwards.get(remotePort);
      if (forward === undefined) {
        forward = LocalPortForward.listen(
          async () => (await this.#connected()).forwardToLoopback(remotePort),
          () => this.#markActive(),
        );
        this.#forwards.set(remotePort, forward);
        forward.catch(() => this.#forwards.delete(remotePort));
      }
      return (await forward).localPort;
    } finally {
      this.#pendingRequests -= 1;
      this.#markActive();
    }
  }

  /** Whether any local forward has been opened (a tunnel without one holds nothing worth keeping). */
  get hasForwards(): boolean {
    return this.#forwards.size > 0;
  }

  /** Closes the forwards and the SSH connection; idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#idleTimer);
    const forwards = [...this.#forwards.values()];
    this.#forwards.clear();
    this.#connection?.close();
    this.#connection = null;
    await Promise.all(
      forwards.map((forward) =>
        forward.then(
          (opened) => opened.close(),
          () => undefined,
        ),
      ),
    );
  }

  #connected(): Promise<SshConnection> {
    if (this.#closed) return Promise.reject(new Error('The SSH tunnel is closed'));
    if (this.#connection?.isOpen) return Promise.resolve(this.#connection);
    if (this.#connecting === null) {
      this.#connecting = SshConnection.open({
        target: this.options.target,
        proxy: this.options.proxy,
        privateKey: this.#privateKey,
        proxyPrivateKey: this.#proxyPrivateKey,
        connectTimeoutMs: this.options.connectTimeoutMs,
      })
        .then((connection) => {
          if (this.#closed) {
            connection.close();
            throw new Error('The SSH tunnel is closed');
          }
          this.#connection = connection;
          connection.onClose(() => {
            if (this.#connection === connection) this.#connection = null;
          });
          return connection;
        })
        .finally(() => {
          this.#connecting = null;
        });
    }
    return this.#connecting;
  }

  #markActive(): void {
    if (this.#closed) return;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => void this.#closeIfIdle(), this.options.idleTimeoutMs);
    // An idle tunnel must not keep the server process alive.
    this.#idleTimer.unref();
  }

  async #closeIfIdle(): Promise<void> {
    const forwards = await Promise.all(
      [...this.#forwards.values()].map((forward) => forward.catch(() => null)),
    );
    const inUse = forwards.some((forward) => forward !== null && forward.activeConnections > 0);
    if (inUse || this.#pendingRequests > 0) {
      this.#markActive();
      return;
    }
    // Forget the tunnel first, so a request arriving now opens a fresh one.
    this.options.onIdleClose();
    await this.close();
  }
}
