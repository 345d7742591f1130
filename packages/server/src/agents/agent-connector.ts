import type { JobProvisioningData } from '@dstack/core';
import { httpUrl, isDirectlyReachable, shimPortOf } from './agent-endpoints.js';
import { AgentUnreachableError } from './agent-unreachable-error.js';
import type { SshTarget } from './ssh-connection.js';
import { SshTunnel } from './ssh-tunnel.js';

export interface AgentConnectorOptions {
  /** Close an SSH tunnel after this many milliseconds without use. Default 120000 (dstack's ControlPersist=2m). */
  idleTimeoutMs?: number;
  /**
   * Limit on reaching a host and finishing the SSH handshake, in milliseconds.
   * Default: `DSTACK_SERVER_SSH_CONNECT_TIMEOUT` (seconds) when set, else 3000.
   */
  connectTimeoutMs?: number;
}

export const DEFAULT_AGENT_TUNNEL_IDLE_TIMEOUT_MS = 120_000;
export const DEFAULT_SSH_CONNECT_TIMEOUT_MS = 3_000;
const DEFAULT_SSH_PORT = 22;

/**
 * Gives the server HTTP base URLs for the agents (shim, runner) of an instance.
 * Instances on this machine without SSH (the local backend) are reached
 * directly on loopback; all others through an SSH connection with the project
 * key (through `ssh_proxy` when set) that forwards the agent ports to local
 * ports. Connections are pooled per (user, host, port, proxy) and closed after
 * `idleTimeoutMs` without use, so ask for the URL again before each batch of
 * requests rather than keeping it.
 */
export class AgentConnector {
  readonly #idleTimeoutMs: number;
  readonly #connectTimeoutMs: number;
  readonly #tunnels = new Map<string, SshTunnel>();
  #closed = false;

  constructor(options: AgentConnectorOptions = {}) {
    this.#idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_AGENT_TUNNEL_IDLE_TIMEOUT_MS;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? connectTimeoutFromEnvironment();
  }

  /**
   * The shim's base URL, e.g. `http://127.0.0.1:41234`. `proxyPrivateKey` is the `ssh_proxy`'s
   * own key (an SSH fleet's `proxy_jump`); default `privateKey`. Throws `AgentUnreachableError`.
   */
  shimUrl(
    provisioningData: JobProvisioningData,
    privateKey: string,
    proxyPrivateKey?: string,
  ): Promise<string> {
    return this.#agentUrl(provisioningData, privateKey, shimPortOf(provisioningData), proxyPrivateKey);
  }

  /**
   * The runner's base URL. `runnerPort` is the runner's port on the instance
   * (10999, or the host port the shim mapped it to); `proxyPrivateKey` as for `shimUrl`.
   * Throws `AgentUnreachableError`.
   */
  runnerUrl(
    provisioningData: JobProvisioningData,
    privateKey: string,
    runnerPort: number,
    proxyPrivateKey?: string,
  ): Promise<string> {
    return this.#agentUrl(provisioningData, privateKey, runnerPort, proxyPrivateKey);
  }

  /** Closes every tunnel and SSH connection; the connector cannot be used afterwards. */
  async close(): Promise<void> {
    this.#closed = true;
    const tunnels = [...this.#tunnels.values()];
    this.#tunnels.clear();
    await Promise.all(tunnels.map((tunnel) => tunnel.close()));
  }

  async #agentUrl(
    provisioningData: JobProvisioningData,
    privateKey: string,
    port: number,
    proxyPrivateKey: string | undefined,
  ): Promise<string> {
    if (this.#closed) throw new Error('The AgentConnector is closed');
    const hostname = provisioningData.hostname;
    if (hostname == null) {
      throw new AgentUnreachableError(
        `Instance ${provisioningData.instance_id} has no hostname yet; its agents cannot be reached`,
        { port },
      );
    }
    if (isDirectlyReachable(provisioningData)) return httpUrl(hostname, port);

    const target: SshTarget = {
      hostname,
      port: provisioningData.ssh_port ?? DEFAULT_SSH_PORT,
      username: provisioningData.username,
    };
    const proxy = provisioningData.ssh_proxy ?? null;
    const key = poolKey(target, proxy);
    let tunnel = this.#tunnels.get(key);
    if (tunnel === undefined) {
      const created = new SshTunnel({
        target,
        proxy,
        connectTimeoutMs: this.#connectTimeoutMs,
        idleTimeoutMs: this.#idleTimeoutMs,
        onIdleClose: () => {
          if (this.#tunnels.get(key) === created) this.#tunnels.delete(key);
        },
      });
      this.#tunnels.set(key, created);
      tunnel = created;
    }
    try {
      return httpUrl('127.0.0.1', await tunnel.localPortFor(port, privateKey, proxyPrivateKey));
    } catch (error) {
      // A host that was never reached leaves nothing to reuse; do not pool it.
      if (!tunnel.hasForwards && this.#tunnels.get(key) === tunnel) {
        this.#tunnels.delete(key);
        await tunnel.close();
      }
      throw error;
    }
  }
}

function poolKey(target: SshTarget, proxy: SshTarget | null): string {
  const describe = (each: SshTarget) => `${each.username}@${each.hostname}:${each.port}`;
  return proxy === null ? describe(target) : `${describe(target)} via ${describe(proxy)}`;
}

function connectTimeoutFromEnvironment(): number {
  const seconds = Number(process.env.DSTACK_SERVER_SSH_CONNECT_TIMEOUT);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : DEFAULT_SSH_CONNECT_TIMEOUT_MS;
}
