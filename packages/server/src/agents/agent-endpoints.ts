import type { JobProvisioningData } from '@dstack/core';
import { DSTACK_SHIM_HTTP_PORT } from '@dstack/core/agent-protocol';

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '::1', 'localhost']);

/** Whether `hostname` names this machine's loopback interface. */
export function isLoopbackHost(hostname: string | null | undefined): boolean {
  return hostname != null && LOOPBACK_HOSTS.has(hostname.toLowerCase());
}

/**
 * Whether the server talks to the instance's agents directly rather than over
 * SSH: true for instances on this machine without an SSH port (the local backend).
 */
export function isDirectlyReachable(provisioningData: JobProvisioningData): boolean {
  return provisioningData.ssh_port == null && isLoopbackHost(provisioningData.hostname);
}

/**
 * The shim's port on the instance: `agent_ports.shim` of the backend data when the
 * backend chose one (the local backend lets the shim pick a free port), else 10998.
 */
export function shimPortOf(provisioningData: JobProvisioningData): number {
  const port = parseAgentPorts(provisioningData.backend_data).shim;
  return port ?? DSTACK_SHIM_HTTP_PORT;
}

/** `http://host:port`, with IPv6 literals in brackets. */
export function httpUrl(host: string, port: number): string {
  return host.includes(':') ? `http://[${host}]:${port}` : `http://${host}:${port}`;
}

function parseAgentPorts(backendData: string | null | undefined): { shim?: number } {
  if (!backendData) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(backendData);
  } catch {
    // Backend data belongs to the backend; a value that is not JSON just carries no ports.
    return {};
  }
  if (typeof parsed !== 'object' || parsed === null) return {};
  const ports = (parsed as { agent_ports?: unknown }).agent_ports;
  if (typeof ports !== 'object' || ports === null) return {};
  const shim = (ports as { shim?: unknown }).shim;
  return Number.isInteger(shim) && (shim as number) > 0 ? { shim: shim as number } : {};
}

/** The keys of an instance's SSH tunnel: the instance's, and its `ssh_proxy`'s own (if it has one). */
export interface InstanceKeys {
  privateKey: string;
  proxyPrivateKey?: string;
}
