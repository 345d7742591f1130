/**
 * Why a cloud instance's shim never came up, from the VM bootstrap's own log: when the instance
 * answers SSH but not on the shim's port, the server logs in with the project key (as it does to
 * tunnel to the shim) and reads the end of `VM_SHIM_LOG`. A bootstrap that gave up (the agent
 * runtime could not be downloaded, or does not start) ends it with `AGENT_BOOTSTRAP_FAILURE_MARKER`;
 * then there is nothing to wait for, and the job fails at once with those lines instead of at the
 * provisioning timeout.
 */
import { AGENT_BOOTSTRAP_FAILURE_MARKER, type JobProvisioningData, VM_SHIM_LOG } from '@dstack/core';
import { connectToHost, execOnHost, type SshHostAddress } from './ssh-host-probe.js';

/** How many of the log's last lines the failure quotes. */
export const BOOTSTRAP_LOG_LINES = 15;
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * The failure the bootstrap recorded, as a message with the log's last lines; null when it has
 * not given up (still downloading, or no log yet) or the host cannot be logged in to.
 */
export async function bootstrapFailureOf(
  provisioningData: JobProvisioningData,
  projectPrivateKey: string,
): Promise<string | null> {
  if (!provisioningData.hostname) return null;
  const proxy = provisioningData.ssh_proxy;
  const address: SshHostAddress = {
    hostname: provisioningData.hostname,
    port: provisioningData.ssh_port ?? 22,
    username: provisioningData.username,
    privateKey: projectPrivateKey,
    ...(proxy
      ? {
          proxy: {
            hostname: proxy.hostname,
            port: proxy.port,
            username: proxy.username,
            privateKey: projectPrivateKey,
          },
        }
      : {}),
  };
  let tail: string;
  try {
    const client = await connectToHost(address, CONNECT_TIMEOUT_MS);
    try {
      tail = await execOnHost(client, `tail -n ${BOOTSTRAP_LOG_LINES} ${VM_SHIM_LOG} 2>/dev/null || true`);
    } finally {
      client.end();
    }
  } catch {
    return null;
  }
  return bootstrapFailureIn(tail);
}

/** The failure in the log's last lines (the marker's line, then the lines), or null without the marker. */
export function bootstrapFailureIn(tail: string): string | null {
  const lines = tail.trimEnd().split('\n');
  const marker = lines.findLast((line) => line.startsWith(AGENT_BOOTSTRAP_FAILURE_MARKER));
  if (marker === undefined) return null;
  const cause = marker.slice(AGENT_BOOTSTRAP_FAILURE_MARKER.length).trim();
  return `the instance's bootstrap failed: ${cause}. The end of ${VM_SHIM_LOG}:\n${lines.join('\n')}`;
}
