/**
 * How the server reaches an SSH fleet host (dstack's `RemoteConnectionInfo`): the login and
 * key from the fleet configuration and where the deploy left the shim. Stored encrypted on the
 * instance (`instances.remote_connection_info`), never in the provisioning data, which is
 * copied to jobs and shown by the API.
 */
import type { AppContext } from '../context.js';
import type { InstancesTable } from '../db/schema.js';

/** The backend type of SSH fleet instances, as in dstack (`BackendType.REMOTE`). */
export const REMOTE_BACKEND_TYPE = 'remote';
/** The region dstack reports for SSH fleet instances. */
export const REMOTE_REGION = 'remote';

export interface RemoteConnectionInfo {
  host: string;
  port: number;
  ssh_user: string;
  /** The login key's content (private, OpenSSH or PEM). */
  ssh_private_key: string;
  /** The shim's home on the host (absolute), removed when the instance goes. */
  shim_home: string;
  /** The shim's pid on the host, stopped when the instance goes. */
  shim_pid: number;
}

export function encodeRemoteConnection(app: AppContext, info: RemoteConnectionInfo): string {
  return app.encryption.encrypt(JSON.stringify(info));
}

/** The instance's connection info, or null for an instance that is not an SSH fleet host. */
export function remoteConnectionOf(
  app: AppContext,
  instance: Pick<InstancesTable, 'remote_connection_info'>,
): RemoteConnectionInfo | null {
  if (!instance.remote_connection_info) return null;
  return JSON.parse(app.encryption.decrypt(instance.remote_connection_info)) as RemoteConnectionInfo;
}
