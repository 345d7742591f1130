/**
 * SSH fleets (`ssh_config`): hosts the user already has, reached directly or through a jump
 * host (`proxy_jump`). Applying one deploys the shim to every new host before anything is
 * written, so a fleet whose hosts cannot all be reached is rejected with an error naming the
 * host's field (or the key's, or the proxy's) and leaves nothing behind;
 * then the fleet and one `idle` instance per host are recorded. Re-applying adds new hosts and
 * lets go of removed ones. Hosts are never terminated: their instance's termination stops the
 * shim and removes its home (see the instance pipeline).
 */
import { randomUUID } from 'node:crypto';
import { posix } from 'node:path';
import {
  ConfigurationError,
  type InstanceOfferWithAvailability,
  type JobProvisioningData,
  ServerClientError,
  type SshConfig,
} from '@dstack/core';
import { localAgentRuntime } from '../agents/agent-runtime-archive.js';
import { newAgentToken } from '../agents/agent-tokens.js';
import {
  encodeRemoteConnection,
  REMOTE_BACKEND_TYPE,
  REMOTE_REGION,
  type RemoteConnectionInfo,
  remoteLoginOf,
} from '../agents/remote-connection.js';
import { type DeployedShim, deployShim, stopDeployedShim } from '../agents/ssh-host-deploy.js';
import {
  describeHost,
  type SshHostAddress,
  SshHostProbeError,
  type SshLoginAddress,
} from '../agents/ssh-host-probe.js';
import type { AppContext } from '../context.js';
import {
  fleetConfigurationOf,
  instanceOfferColumn,
  instanceProvisioningDataColumn,
  instanceProvisioningDataOf,
} from '../db/json-columns.js';
import type { FleetsTable, InstancesTable, ProjectsTable } from '../db/schema.js';
import { type EventActor, eventTargets, recordEvent } from '../events/event-recorder.js';
import { recordStatusChange } from '../events/status-events.js';
import { type BlocksSetting, totalBlocksFor } from './instance-blocks.js';
import { nextInstanceNum } from './instance-launch.js';

/**
 * Where shims live on SSH fleet hosts, one directory per instance; relative paths are under
 * the SSH user's home. Default `.dstack/ssh-fleet`; `DSTACK_SERVER_SSH_FLEET_DIR` overrides it.
 * The agent runtime the shims start from is kept beside it, in `agent-runtime/<key>`.
 */
export const DEFAULT_SSH_FLEET_HOST_DIR = '.dstack/ssh-fleet';

const DEFAULT_SSH_PORT = 22;
const CONFIGURATION_PATH = ['plan', 'spec', 'configuration'] as const;

/** One host of the configuration with everything needed to log in, and the fields to blame. */
interface SshFleetHost {
  address: SshHostAddress;
  /** `ssh_config.hosts[i]`, as a path. */
  hostField: Array<string | number>;
  /** The field the key came from: the host's `identity_file`, else `ssh_config.identity_file`. */
  keyField: Array<string | number>;
  /** The proxy's field: the host's `proxy_jump`, else `ssh_config.proxy_jump`; null without a proxy. */
  proxyField: Array<string | number> | null;
  /** Blocks to split the host into: the host's `blocks`, else the fleet's. */
  blocks: BlocksSetting;
  /** The field `blocks` came from. */
  blocksField: Array<string | number>;
  /**
   * The host's `internal_ip`: where the other hosts of a cluster reach it. Null: its `hostname`
   * (the hosts' network as given).
   */
  internalIp: string | null;
}

function fieldError(message: string, field: ReadonlyArray<string | number>): ConfigurationError {
  const named = field.map((part, index) =>
    typeof part === 'number' ? `[${part}]` : `${index > 0 ? '.' : ''}${part}`,
  );
  return new ConfigurationError(`${named.join('')}: ${message}`, { path: [...CONFIGURATION_PATH, ...field] });
}

type SshEndpoint = Pick<SshLoginAddress, 'hostname' | 'port' | 'username'>;

/**
 * `user@host:port`, and ` via user@proxy:port` behind a proxy: one host of a fleet (the same
 * private address behind two proxies is two machines).
 */
function hostIdentity(address: SshEndpoint, proxy: SshEndpoint | null | undefined): string {
  return proxy ? `${describeHost(address)} via ${describeHost(proxy)}` : describeHost(address);
}

type ProxyJump = NonNullable<SshConfig['proxy_jump']>;

/** The proxy's login; its key content is required as the host's is. */
function proxyAddressOf(proxyJump: ProxyJump, proxyField: Array<string | number>): SshLoginAddress {
  if (proxyJump.ssh_key === undefined) {
    throw fieldError(
      `no key content for the proxy ${proxyJump.hostname}: set identity_file (the CLI sends the file's content as ssh_key)`,
      [...proxyField, 'identity_file'],
    );
  }
  return {
    hostname: proxyJump.hostname,
    port: proxyJump.port ?? DEFAULT_SSH_PORT,
    username: proxyJump.user,
    privateKey: proxyJump.ssh_key.private,
  };
}

/**
 * The hosts of `ssh_config`, each with its user, port, key, proxy and blocks resolved (host
 * values first: a host's own `proxy_jump` replaces the fleet's, its `blocks` the fleet's `blocks`).
 */
export function sshFleetHostsOf(sshConfig: SshConfig, fleetBlocks: BlocksSetting = 1): SshFleetHost[] {
  const seen = new Set<string>();
  return sshConfig.hosts.map((entry, index) => {
    const host = typeof entry === 'string' ? { hostname: entry } : entry;
    const hostField = ['ssh_config', 'hosts', index];
    const username = ('user' in host ? host.user : undefined) ?? sshConfig.user;
    if (username === undefined) {
      throw fieldError(`no user for host ${host.hostname}: set ssh_config.user or the host's user`, [
        'ssh_config',
        'user',
      ]);
    }
    const ownKey = 'ssh_key' in host ? host.ssh_key : undefined;
    const ownKeyFile = 'identity_file' in host ? host.identity_file : undefined;
    const keyField =
      ownKey !== undefined || ownKeyFile !== undefined
        ? [...hostField, 'identity_file']
        : ['ssh_config', 'identity_file'];
    const privateKey = ownKey?.private ?? (ownKeyFile === undefined ? sshConfig.ssh_key?.private : undefined);
    if (privateKey === undefined) {
      throw fieldError(
        `no key content for host ${host.hostname}: set identity_file (the CLI sends the file's content as ssh_key)`,
        keyField,
      );
    }
    const ownProxy = 'proxy_jump' in host ? host.proxy_jump : undefined;
    const proxyJump = ownProxy ?? sshConfig.proxy_jump;
    const proxyField = ownProxy !== undefined ? [...hostField, 'proxy_jump'] : ['ssh_config', 'proxy_jump'];
    const address: SshHostAddress = {
      hostname: host.hostname,
      port: ('port' in host ? host.port : undefined) ?? sshConfig.port ?? DEFAULT_SSH_PORT,
      username,
      privateKey,
      ...(proxyJump ? { proxy: proxyAddressOf(proxyJump, proxyField) } : {}),
    };
    const id = hostIdentity(address, address.proxy);
    if (seen.has(id)) throw fieldError(`${id} is listed twice`, hostField);
    seen.add(id);
    const ownBlocks = 'blocks' in host ? host.blocks : undefined;
    return {
      address,
      hostField,
      keyField,
      proxyField: proxyJump ? proxyField : null,
      blocks: ownBlocks ?? fleetBlocks,
      blocksField: ownBlocks !== undefined ? [...hostField, 'blocks'] : ['blocks'],
      internalIp: ('internal_ip' in host ? host.internal_ip : undefined) ?? null,
    };
  });
}

/** The proxy as stored and shown: without its key content. */
function proxyWithoutKeyContent(proxyJump: ProxyJump): ProxyJump {
  const { ssh_key: _proxyKey, ...rest } = proxyJump;
  return rest;
}

/** The configuration as stored and shown: the key contents live encrypted on the instances only. */
export function withoutKeyContents(sshConfig: SshConfig): SshConfig {
  const { ssh_key: _fleetKey, proxy_jump: proxyJump, ...rest } = sshConfig;
  return {
    ...rest,
    ...(proxyJump ? { proxy_jump: proxyWithoutKeyContent(proxyJump) } : {}),
    hosts: rest.hosts.map((host) => {
      if (typeof host === 'string') return host;
      const { ssh_key: _hostKey, proxy_jump: hostProxy, ...hostRest } = host;
      return hostProxy ? { ...hostRest, proxy_jump: proxyWithoutKeyContent(hostProxy) } : hostRest;
    }),
  };
}

function hostDirectory(instanceId: string): string {
  return `${process.env.DSTACK_SERVER_SSH_FLEET_DIR || DEFAULT_SSH_FLEET_HOST_DIR}/${instanceId}`;
}

/**
 * Where hosts keep the agent runtime the shims start from, shared by their instances and kept
 * after them: `agent-runtime` beside the instances' directory (`.dstack/agent-runtime`).
 */
function hostAgentRuntimeDirectory(): string {
  const fleetDirectory = process.env.DSTACK_SERVER_SSH_FLEET_DIR || DEFAULT_SSH_FLEET_HOST_DIR;
  return posix.join(posix.dirname(fleetDirectory), 'agent-runtime');
}

function deployError(host: SshFleetHost, error: unknown): ConfigurationError {
  if (error instanceof ConfigurationError) return error;
  if (error instanceof SshHostProbeError && error.hop === 'proxy' && host.proxyField !== null) {
    const field = error.reason === 'authentication' ? [...host.proxyField, 'identity_file'] : host.proxyField;
    return fieldError(error.message, field);
  }
  if (error instanceof SshHostProbeError) {
    const field = error.reason === 'authentication' ? host.keyField : host.hostField;
    return fieldError(error.message, field);
  }
  return fieldError(
    `deploying to ${describeHost(host.address)} failed: ${(error as Error).message}`,
    host.hostField,
  );
}

interface DeployedHost {
  host: SshFleetHost;
  instanceId: string;
  /** The token the host's shim requires (plain; encrypted on the row). */
  agentToken: string;
  shim: DeployedShim;
  /** The blocks the host is split into, from its `blocks` and the resources the deploy found. */
  totalBlocks: number;
}

/** The host's blocks for the resources found on it; an uneven split is an error naming `blocks`. */
function hostTotalBlocks(host: SshFleetHost, shim: DeployedShim): number {
  const totalBlocks = totalBlocksFor(host.blocks, shim.resources);
  if (totalBlocks !== null) return totalBlocks;
  const { cpus, gpus } = shim.resources;
  throw fieldError(
    `${describeHost(host.address)} has ${cpus} CPUs and ${gpus.length} GPUs: ` +
      `they cannot be split into ${host.blocks} blocks (both must be divisible by the number of blocks)`,
    host.blocksField,
  );
}

/** Deploys to every host at once; when any fails, stops the shims that did start and throws that failure. */
async function deployAll(hosts: readonly SshFleetHost[]): Promise<DeployedHost[]> {
  if (hosts.length === 0) return [];
  const agentRuntime = await localAgentRuntime();
  const results = await Promise.allSettled(
    hosts.map(async (host) => {
      const instanceId = randomUUID();
      const agentToken = newAgentToken();
      const shim = await deployShim(host.address, {
        agentRuntime,
        agentRuntimeDir: hostAgentRuntimeDirectory(),
        homeDir: hostDirectory(instanceId),
        // Jobs run in their images where the host has Docker (dstack's SSH fleets require it),
        // as processes refusing images where it has not.
        runtime: 'auto',
        token: agentToken,
      });
      try {
        return { host, instanceId, agentToken, shim, totalBlocks: hostTotalBlocks(host, shim) };
      } catch (error) {
        // Only deployed hosts are undone below: this one's shim must not stay either.
        await stopDeployedShim(host.address, shim, { graceMs: 0 }).catch(() => undefined);
        throw error;
      }
    }),
  );
  const failureIndex = results.findIndex((result) => result.status === 'rejected');
  const deployed = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  if (failureIndex < 0) return deployed;
  await Promise.all(
    deployed.map(({ host, shim }) =>
      stopDeployedShim(host.address, shim, { graceMs: 0 }).catch((error: unknown) => {
        console.error(
          `[fleets] removing the shim from ${describeHost(host.address)} failed: ${(error as Error).message}`,
        );
      }),
    ),
  );
  const failure = results[failureIndex] as PromiseRejectedResult;
  throw deployError(hosts[failureIndex] as SshFleetHost, failure.reason);
}

function hostOffer(deployed: DeployedHost): InstanceOfferWithAvailability {
  const { resources } = deployed.shim;
  return {
    backend: REMOTE_BACKEND_TYPE,
    instance: {
      name: deployed.host.address.hostname,
      resources: {
        cpus: resources.cpus,
        memory_mib: resources.memory_mib,
        gpus: resources.gpus,
        spot: false,
        disk: { size_mib: resources.disk_mib },
        cpu_arch: resources.cpu_arch,
      },
    },
    region: REMOTE_REGION,
    price: 0,
    backend_data: {},
    availability: 'available',
    instance_runtime: 'shim',
    blocks: deployed.totalBlocks,
    total_blocks: deployed.totalBlocks,
  };
}

function hostInstanceRow(
  app: AppContext,
  fleet: FleetsTable,
  instanceNum: number,
  deployed: DeployedHost,
): InstancesTable {
  const now = Date.now();
  const { address } = deployed.host;
  const offer = hostOffer(deployed);
  const provisioningData: JobProvisioningData = {
    backend: REMOTE_BACKEND_TYPE,
    instance_type: offer.instance,
    // The instance row's id: the agent clients find the host's key by it.
    instance_id: deployed.instanceId,
    hostname: address.hostname,
    internal_ip: deployed.host.internalIp,
    public_ip_enabled: true,
    region: REMOTE_REGION,
    price: 0,
    username: address.username,
    ssh_port: address.port,
    dockerized: true,
    ssh_proxy: address.proxy
      ? { hostname: address.proxy.hostname, username: address.proxy.username, port: address.proxy.port }
      : null,
    backend_data: JSON.stringify({ agent_ports: { shim: deployed.shim.port } }),
  };
  const connection: RemoteConnectionInfo = {
    ...remoteLoginOf(address),
    shim_home: deployed.shim.home,
    shim_pid: deployed.shim.pid,
  };
  return {
    id: deployed.instanceId,
    project_id: fleet.project_id,
    fleet_id: fleet.id,
    name: `${fleet.name}-${instanceNum}`,
    instance_num: instanceNum,
    status: 'idle',
    unreachable: 0,
    termination_reason: null,
    termination_reason_message: null,
    created_at: now,
    last_processed_at: now,
    started_at: now,
    finished_at: null,
    backend: REMOTE_BACKEND_TYPE,
    region: REMOTE_REGION,
    price: 0,
    offer: instanceOfferColumn.encode(offer),
    job_provisioning_data: instanceProvisioningDataColumn.encode(provisioningData),
    requirements: null,
    instance_configuration: null,
    // Hosts the user owns are kept however long they are idle.
    termination_idle_time: null,
    termination_deadline: null,
    provisioning_deadline: null,
    first_termination_retry_at: null,
    last_termination_retry_at: null,
    idle_since: now,
    total_blocks: deployed.totalBlocks,
    busy_blocks: 0,
    deleted: 0,
    remote_connection_info: encodeRemoteConnection(app, connection),
    agent_token: app.encryption.encrypt(deployed.agentToken),
    lock_expires_at: null,
    lock_token: null,
    lock_owner: null,
  };
}

/** The `hostIdentity` of a live instance, from its provisioning data. */
function hostIdOf(instance: InstancesTable): string | null {
  const data = instanceProvisioningDataOf(instance);
  if (!data?.hostname) return null;
  return hostIdentity(
    { hostname: data.hostname, username: data.username, port: data.ssh_port ?? DEFAULT_SSH_PORT },
    data.ssh_proxy,
  );
}

/**
 * Applies an SSH fleet: `fleetRow` is the row to write (new, or the existing one with the
 * new spec), `existing` whether it is already stored. Throws before writing anything when a
 * new host cannot be deployed.
 */
export async function applySshFleet(
  app: AppContext,
  _project: ProjectsTable,
  fleetRow: FleetsTable,
  sshConfig: SshConfig,
  existing: boolean,
  actor: EventActor,
): Promise<void> {
  const hosts = sshFleetHostsOf(sshConfig, fleetConfigurationOf(fleetRow).blocks);
  const live = existing
    ? await app.db
        .selectFrom('instances')
        .selectAll()
        .where('fleet_id', '=', fleetRow.id)
        .where('deleted', '=', 0)
        .where('status', 'not in', ['terminating', 'terminated'])
        .execute()
    : [];
  const liveIds = new Set(live.map(hostIdOf));
  const wanted = new Set(hosts.map((host) => hostIdentity(host.address, host.address.proxy)));
  const removed = live.filter((instance) => !wanted.has(hostIdOf(instance) ?? ''));
  const busy = removed.filter((instance) => instance.busy_blocks > 0 || instance.status === 'busy');
  if (busy.length > 0) {
    throw new ServerClientError(
      `Hosts ${busy.map((instance) => hostIdOf(instance)).join(', ')} run jobs; stop them before removing the hosts`,
    );
  }
  const added = hosts.filter((host) => !liveIds.has(hostIdentity(host.address, host.address.proxy)));
  const deployed = await deployAll(added);
  try {
    let instanceNum = existing ? await nextInstanceNum(app.db, fleetRow.id) : 0;
    await app.db.transaction().execute(async (trx) => {
      if (existing) {
        await trx
          .updateTable('fleets')
          .set({ spec: fleetRow.spec, last_processed_at: 0 })
          .where('id', '=', fleetRow.id)
          .execute();
      } else {
        await trx.insertInto('fleets').values(fleetRow).execute();
        await recordEvent(trx, app.settings.events, {
          message: `Fleet created. Status: ${fleetRow.status.toUpperCase()}`,
          actor,
          targets: [eventTargets.fleet(fleetRow)],
        });
      }
      for (const each of deployed) {
        const instance = hostInstanceRow(app, fleetRow, instanceNum++, each);
        await trx.insertInto('instances').values(instance).execute();
        await recordEvent(trx, app.settings.events, {
          message: `Instance created on fleet submission. Status: ${instance.status.toUpperCase()}`,
          actor,
          targets: [eventTargets.instance(instance)],
        });
      }
      if (removed.length > 0) {
        const update = { status: 'terminating', termination_reason: 'terminated_by_user' } as const;
        await trx
          .updateTable('instances')
          .set({ ...update, last_processed_at: 0 })
          .where(
            'id',
            'in',
            removed.map((instance) => instance.id),
          )
          .execute();
        for (const instance of removed) {
          await recordStatusChange(trx, app.settings.events, 'instances', instance, update, actor);
        }
      }
    });
  } catch (error) {
    // Recording failed (a name taken meanwhile): the shims started for it must not stay.
    await Promise.all(
      deployed.map(({ host, shim }) =>
        stopDeployedShim(host.address, shim, { graceMs: 0 }).catch(() => undefined),
      ),
    );
    throw error;
  }
  if (removed.length > 0) app.wakeUps.wake('instances');
  if (deployed.length > 0) app.wakeUps.wake('jobs-submitted');
}
