/**
 * The services the run machinery needs from the assembly, typed structurally
 * so that tests and benchmarks can provide their own (a test backend, a fake
 * agent connector).
 */
import type { BackendPlugin, Compute, JobProvisioningData } from '@dstack/core';
import type { AppContext } from './context.js';
import type { WakeUps } from './pipelines/wake-ups.js';

export interface ProjectBackend {
  type: string;
  plugin: BackendPlugin;
  compute: Compute;
}

export interface ProjectBackendSource {
  getProjectBackends(projectId: string): Promise<ProjectBackend[]>;
}

/**
 * Where the agents of an instance answer (directly on loopback, or through an SSH tunnel).
 * `proxyPrivateKey` is the `ssh_proxy`'s own key (an SSH fleet's `proxy_jump`); default `privateKey`.
 */
export interface AgentAddresses {
  shimUrl(
    provisioningData: JobProvisioningData,
    privateKey: string,
    proxyPrivateKey?: string,
  ): Promise<string>;
  runnerUrl(
    provisioningData: JobProvisioningData,
    privateKey: string,
    runnerPort: number,
    proxyPrivateKey?: string,
  ): Promise<string>;
}

export interface RunServices {
  backends: ProjectBackendSource;
  agents: AgentAddresses;
  wakeUps: WakeUps;
}

export function runServicesOf(app: AppContext): RunServices {
  const services = app.services as Partial<RunServices>;
  if (!services.backends || !services.agents || !services.wakeUps) {
    throw new Error('The server was assembled without its run services (backends, agents, wakeUps)');
  }
  return services as RunServices;
}
