/**
 * The agent runtime where emulated hosts can download it: a VM's bootstrap fetches the agent
 * runtime (the npm tarball of `@dstack/runner-runtime-linux-x64`: node with its loader and
 * libraries, the shim and the runner) from the server's `DSTACK_SHIM_DOWNLOAD_URL`, and an
 * emulated host reaches nothing but its bridge. So the workspace's runtime package is packed once,
 * as a release publishes it, and served from this machine's address on the hosts' bridge (the
 * network's gateway).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { DockerEmulatedHosts } from './docker-emulated-hosts.js';
import { type ServedFile, serveFile, servePackedWorkspacePackage } from './served-file.js';

const run = promisify(execFile);

/** The package a release publishes the x86_64 agent runtime in (core's `agentRuntimeTarballUrl()`). */
export const AGENT_RUNTIME_PACKAGE = '@dstack/runner-runtime-linux-x64';

/** The tarball's `url` is for `DSTACK_SHIM_DOWNLOAD_URL` / `agent_download_url`. */
export type AgentRuntimeServer = ServedFile;

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

export interface ServeAgentRuntimeOptions {
  /** A runtime tarball packed already (e.g. the one a packed install installs); default: pack the workspace's. */
  tarball?: string;
}

/**
 * Serves the agent runtime on the hosts' bridge: `options.tarball`, or
 * @dstack/runner-runtime-linux-x64 (built) packed with `pnpm pack`.
 */
export async function serveAgentRuntime(
  hosts: DockerEmulatedHosts,
  options: ServeAgentRuntimeOptions = {},
): Promise<AgentRuntimeServer> {
  await hosts.prepare();
  const host = await bridgeGateway(hosts.network);
  return options.tarball
    ? serveFile(options.tarball, host)
    : servePackedWorkspacePackage(AGENT_RUNTIME_PACKAGE, host);
}
