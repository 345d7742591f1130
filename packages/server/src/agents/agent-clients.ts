/**
 * Shim and runner clients for a job's instance, reached directly or through an SSH tunnel:
 * with the host's own key (and its proxy's) for an SSH fleet host, else with the project key.
 */
import type { JobProvisioningData } from '@dstack/core';
import { RunnerClient } from '@dstack/runner';
import { ShimClient } from '@dstack/shim';
import type { AppContext } from '../context.js';
import type { JobsTable, ProjectsTable } from '../db/schema.js';
import type { InstanceKeys } from './agent-endpoints.js';
import { instanceAgentToken, runnerAgentToken } from './agent-tokens.js';
import { REMOTE_BACKEND_TYPE, remoteConnectionOf } from './remote-connection.js';

/** The project's SSH private key in clear (cached per project row). */
export function projectKeyOf(app: AppContext, project: ProjectsTable): string {
  let key = app.caches.projects.sshKeys.get(project);
  if (key === undefined) {
    key = app.encryption.decrypt(project.ssh_private_key);
    app.caches.projects.sshKeys.set(project, key);
  }
  return key;
}

/**
 * An SSH fleet host's own keys (its instance id is the instance row's): the host's and its
 * proxy's, which the provisioning data's `ssh_proxy` names. Else the project key.
 */
async function keysOf(
  app: AppContext,
  project: ProjectsTable,
  provisioningData: JobProvisioningData,
): Promise<InstanceKeys> {
  if (provisioningData.backend !== REMOTE_BACKEND_TYPE) return { privateKey: projectKeyOf(app, project) };
  const keys = app.caches.agents.instanceHostKeys;
  const cached = keys.get(provisioningData.instance_id);
  if (cached !== undefined) return cached;
  const instance = await app.db
    .selectFrom('instances')
    .select(['id', 'remote_connection_info'])
    .where('id', '=', provisioningData.instance_id)
    .executeTakeFirst();
  const connection = instance ? remoteConnectionOf(app, instance) : null;
  if (connection === null) return { privateKey: projectKeyOf(app, project) };
  const found: InstanceKeys = {
    privateKey: connection.ssh_private_key,
    ...(connection.ssh_proxy ? { proxyPrivateKey: connection.ssh_proxy.ssh_private_key } : {}),
  };
  keys.set(provisioningData.instance_id, found);
  return found;
}

/**
 * The shim of the instance whose row id is `instanceId`, with the instance's agent token.
 * `signal` (a pipeline's `lock.signal`) aborts its calls when the pass is given up; each call
 * also has the client's own deadline.
 */
export async function shimClientFor(
  app: AppContext,
  project: ProjectsTable,
  provisioningData: JobProvisioningData,
  instanceId: string,
  signal?: AbortSignal,
): Promise<ShimClient> {
  const { privateKey, proxyPrivateKey } = await keysOf(app, project, provisioningData);
  return new ShimClient(await app.agents.shimUrl(provisioningData, privateKey, proxyPrivateKey), {
    token: await instanceAgentToken(app, instanceId),
    signal,
  });
}

/**
 * `http://host:port` through which this server reaches `port` on the instance: directly, or
 * through an SSH tunnel with the instance's keys (the runner's port, a service's port).
 */
export async function instancePortUrl(
  app: AppContext,
  project: ProjectsTable,
  provisioningData: JobProvisioningData,
  port: number,
): Promise<string> {
  const { privateKey, proxyPrivateKey } = await keysOf(app, project, provisioningData);
  return app.agents.runnerUrl(provisioningData, privateKey, port, proxyPrivateKey);
}

/** The runner of `job`, with the token it requires; `signal` as for `shimClientFor`. */
export async function runnerClientFor(
  app: AppContext,
  project: ProjectsTable,
  provisioningData: JobProvisioningData,
  runnerPort: number,
  job: Pick<JobsTable, 'id' | 'instance_id'>,
  signal?: AbortSignal,
): Promise<RunnerClient> {
  return new RunnerClient(await instancePortUrl(app, project, provisioningData, runnerPort), {
    token: await runnerAgentToken(app, job, provisioningData),
    signal,
  });
}

/** Where a gateway instance is reached over SSH: its address and the image's user. */
export interface GatewayHostAddress {
  backend: JobProvisioningData['backend'];
  instanceId: string;
  region: string;
  ipAddress: string;
  username: string;
}

/**
 * `http://127.0.0.1:port` through which this server reaches `port` on a gateway instance's
 * loopback (its management API): an SSH tunnel with the project key, pooled like the agents'.
 */
export async function gatewayPortUrl(
  app: AppContext,
  project: ProjectsTable,
  gateway: GatewayHostAddress,
  port: number,
): Promise<string> {
  // The connector pools tunnels by the SSH target of provisioning data; a gateway has no job's
  // instance type or price, so those fields are placeholders it never reads.
  const provisioningData: JobProvisioningData = {
    backend: gateway.backend,
    instance_type: {
      name: 'gateway',
      resources: {
        cpus: 0,
        memory_mib: 0,
        gpus: [],
        spot: false,
        disk: { size_mib: 0 },
      },
    },
    instance_id: gateway.instanceId,
    hostname: gateway.ipAddress,
    internal_ip: null,
    public_ip_enabled: true,
    region: gateway.region,
    price: 0,
    username: gateway.username,
    ssh_port: 22,
    dockerized: false,
  } as JobProvisioningData;
  return app.agents.runnerUrl(provisioningData, projectKeyOf(app, project), port);
}
