/**
 * The shim where emulated hosts can download it: a VM's cloud-init fetches the shim tarball (as
 * npm packs @dstack/shim) from the server's `DSTACK_SHIM_DOWNLOAD_URL`, and an emulated host
 * reaches nothing but its bridge. So the workspace's shim is packed once and served from this
 * machine's address on the hosts' bridge (the network's gateway).
 */
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { DockerEmulatedHosts } from './docker-emulated-hosts.js';

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
  const directory = options.tarball ? undefined : await mkdtemp(join(tmpdir(), 'dstack-shim-tarball-'));
  const removePacked = () =>
    directory ? rm(directory, { recursive: true, force: true }) : Promise.resolve(undefined);
  try {
    const path = options.tarball ?? (await packWorkspaceShim(directory as string));
    const tarball = basename(path);
    await hosts.prepare();
    const gateway = await bridgeGateway(hosts.network);
    const server = createServer((request, response) => {
      if (request.url !== `/${tarball}`) {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/gzip' });
      createReadStream(path).pipe(response);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, gateway, resolve);
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('the tarball server has no port');
    return {
      url: `http://${gateway}:${address.port}/${tarball}`,
      async close() {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
        await removePacked();
      },
    };
  } catch (error) {
    await removePacked();
    throw error;
  }
}

/** Packs the workspace's @dstack/shim into `directory`; resolves with the tarball's path. */
async function packWorkspaceShim(directory: string): Promise<string> {
  const shimPackage = dirname(createRequire(import.meta.url).resolve('@dstack/shim/package.json'));
  await run('pnpm', ['pack', '--pack-destination', directory], { cwd: shimPackage });
  const [tarball] = (await readdir(directory)).filter((name) => name.endsWith('.tgz'));
  if (!tarball) throw new Error(`pnpm pack of ${shimPackage} made no tarball`);
  return join(directory, tarball);
}
