/**
 * The shim where emulated hosts can download it: a VM's cloud-init fetches the shim tarball (as
 * npm packs @dstack/shim) from the server's `DSTACK_SHIM_DOWNLOAD_URL`, and an emulated host
 * reaches nothing but its bridge. So the workspace's shim is packed once and served from this
 * machine's address on the hosts' bridge (the network's gateway).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { DockerEmulatedHosts } from './docker-emulated-hosts.js';
import { type PackedPackage, packWorkspacePackage, serveFile } from './served-file.js';

const run = promisify(execFile);

export interface ShimTarballServer {
  /** The tarball's URL, for `DSTACK_SHIM_DOWNLOAD_URL` / `agent_download_url`. */
  readonly url: string;
  close(): Promise<void>;
}

/** The address this machine has on a Docker network (its gateway), which the network's hosts reach. */
export async function bridgeGateway(network: string): Promise<string> {
  const { stdout } = await run('docker', [
    'network',
    'inspect',
    network,
    '-f',
    '{{range .IPAM.Config}}{{.Gateway}} {{end}}',
  ]);
  const gateway = stdout
    .trim()
    .split(/\s+/)
    .find((address) => /^\d+\.\d+\.\d+\.\d+$/.test(address));
  if (!gateway) throw new Error(`network ${network} has no IPv4 gateway: ${stdout}`);
  return gateway;
}

export interface ServeShimTarballOptions {
  /** A shim tarball packed already (e.g. the one a packed install installs); default: pack the workspace's. */
  tarball?: string;
}

/**
 * Serves the shim tarball on the hosts' bridge: `options.tarball`, or @dstack/shim (built) packed
 * with `pnpm pack`.
 */
export async function serveShimTarball(
  hosts: DockerEmulatedHosts,
  options: ServeShimTarballOptions = {},
): Promise<ShimTarballServer> {
  // Only a tarball packed here is removed on close.
  const packed = options.tarball ? undefined : await packWorkspacePackage('@dstack/shim');
  try {
    await hosts.prepare();
    const served = await serveFile(
      options.tarball ?? (packed as PackedPackage).path,
      await bridgeGateway(hosts.network),
    );
    return {
      url: served.url,
      async close() {
        await served.close();
        await packed?.remove();
      },
    };
  } catch (error) {
    await packed?.remove();
    throw error;
  }
}
