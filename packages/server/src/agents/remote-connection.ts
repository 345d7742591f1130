/**
 * How the server reaches an SSH fleet host (dstack's `RemoteConnectionInfo`): the login and
 * key from the fleet configuration, the jump host in front of it (`proxy_jump`, with its own
 * key), and where the deploy left the shim. Stored encrypted on the instance
 * (`instances.remote_connection_info`), never in the provisioning data, which is copied to jobs
 * and shown by the API (only the proxy's address is there, as `ssh_proxy`).
 */

import { z } from 'zod';
import type { AppContext } from '../context.js';
import { JsonColumn } from '../db/json-columns.js';
import type { InstancesTable } from '../db/schema.js';
import type { SshHostAddress, SshLoginAddress } from './ssh-host-probe.js';

/** The backend type of SSH fleet instances, as in dstack (`BackendType.REMOTE`). */
export const REMOTE_BACKEND_TYPE = 'remote';
/** The region dstack reports for SSH fleet instances. */
export const REMOTE_REGION = 'remote';

/** One SSH login: the host's own, or its jump host's. */
const RemoteLoginSchema = z.object({
  host: z.string(),
  port: z.number().int(),
  ssh_user: z.string(),
  /** The login key's content (private, OpenSSH or PEM). */
  ssh_private_key: z.string(),
});
export type RemoteLogin = z.output<typeof RemoteLoginSchema>;

export const RemoteConnectionInfoSchema = RemoteLoginSchema.extend({
  /**
   * The jump host (`proxy_jump`) the host is reached through, with its own key; absent for a
   * host reached directly (and on rows stored before proxies were supported).
   */
  ssh_proxy: RemoteLoginSchema.optional(),
  /** The shim's home on the host (absolute), removed when the instance goes. */
  shim_home: z.string(),
  /** The shim's pid on the host, stopped when the instance goes. */
  shim_pid: z.number().int(),
});
export type RemoteConnectionInfo = z.output<typeof RemoteConnectionInfoSchema>;

/**
 * The decrypted column, decoded like every JSON column (json-columns.ts); not cached, so that
 * decrypted keys stay no longer in memory than their use (agent-clients.ts caches what it needs).
 */
const remoteConnectionColumn = new JsonColumn(
  'instances',
  'remote_connection_info',
  RemoteConnectionInfoSchema,
  {
    cache: false,
  },
);

export function encodeRemoteConnection(app: AppContext, info: RemoteConnectionInfo): string {
  return app.encryption.encrypt(remoteConnectionColumn.encode(info));
}

/** The instance's connection info, or null for an instance that is not an SSH fleet host. */
export function remoteConnectionOf(
  app: AppContext,
  instance: Pick<InstancesTable, 'id' | 'remote_connection_info'>,
): RemoteConnectionInfo | null {
  if (!instance.remote_connection_info) return null;
  return remoteConnectionColumn.decode(app.encryption.decrypt(instance.remote_connection_info), instance.id);
}

function addressOf(login: RemoteLogin): SshLoginAddress {
  return {
    hostname: login.host,
    port: login.port,
    username: login.ssh_user,
    privateKey: login.ssh_private_key,
  };
}

function loginOf(address: SshLoginAddress): RemoteLogin {
  return {
    host: address.hostname,
    port: address.port,
    ssh_user: address.username,
    ssh_private_key: address.privateKey,
  };
}

/** Where to log in to the host, through its proxy when it has one. */
export function sshHostAddressOf(connection: RemoteConnectionInfo): SshHostAddress {
  return {
    ...addressOf(connection),
    ...(connection.ssh_proxy ? { proxy: addressOf(connection.ssh_proxy) } : {}),
  };
}

/** What to store of a host's login (the inverse of `sshHostAddressOf`). */
export function remoteLoginOf(
  address: SshHostAddress,
): Pick<RemoteConnectionInfo, keyof RemoteLogin | 'ssh_proxy'> {
  return { ...loginOf(address), ...(address.proxy ? { ssh_proxy: loginOf(address.proxy) } : {}) };
}
