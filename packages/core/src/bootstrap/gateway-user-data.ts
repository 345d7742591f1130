/**
 * The user data of a gateway instance (dstack's gateway `get_gateway_user_data`): the same agent
 * runtime as every VM (`agent-runtime-install.ts`), started on the gateway agent's bundle instead
 * of the shim's. cloud-init authorizes the project key (the server reaches the gateway's loopback
 * management API through SSH with it), writes the gateway's agent token to a root-only file (the
 * management API answers only requests that carry it: a process on the gateway, or a request a
 * service's client slips past the proxy, reaches it without the token otherwise) and runs the
 * start script at every boot; the script keeps the gateway running as dstack's systemd unit does.
 * The certificate is not in the user data: the server sends it over the SSH tunnel once the
 * gateway answers.
 */
import { DSTACK_GATEWAY_API_PORT } from '../agent-protocol/gateway-api.js';
import type { GatewayReplicaConfiguration } from '../models/gateways.js';
import { type AgentRuntimeDownload, agentRuntimeInstallLines } from './agent-runtime-install.js';
import { agentCloudConfig, agentRuntimeDownloadOf, VM_AGENT_RUNTIME_DIRECTORY } from './vm-user-data.js';

/** The gateway agent's bundle in the agent runtime, beside `shim.mjs`. */
export const AGENT_RUNTIME_GATEWAY_FILE = 'gateway.mjs';
/** Where the gateway keeps its state (certificate, services) across restarts; root's, 0700. */
export const VM_GATEWAY_HOME = '/root/.dstack/gateway';
/** Where the gateway's agent token is written (mode 0600, root's); the agent reads it with `--token-file`. */
export const VM_GATEWAY_TOKEN_FILE = '/root/.dstack/gateway-token';
export const VM_GATEWAY_START_SCRIPT = '/usr/local/lib/dstack/start-gateway.sh';
export const VM_GATEWAY_LOG = '/var/log/dstack-gateway.log';
const VM_GATEWAY_PER_BOOT_SCRIPT = '/var/lib/cloud/scripts/per-boot/dstack-gateway';

function startGatewayScript(download: AgentRuntimeDownload): string {
  return `#!/bin/sh
# dstack gateway bootstrap: get the agent runtime and keep the gateway running (written by cloud-init).
${agentRuntimeInstallLines(download, VM_AGENT_RUNTIME_DIRECTORY)}mkdir -p ${VM_GATEWAY_HOME} && chmod 0700 ${VM_GATEWAY_HOME}
while true; do
  "$@" "$root/${AGENT_RUNTIME_GATEWAY_FILE}" --home ${VM_GATEWAY_HOME} --api-port ${DSTACK_GATEWAY_API_PORT} --token-file ${VM_GATEWAY_TOKEN_FILE}
  sleep 3
done
`;
}

/** The `#cloud-config` for one gateway replica. Throws when it exceeds `MAX_VM_USER_DATA_BYTES`. */
export function buildGatewayUserData(
  config: Pick<
    GatewayReplicaConfiguration,
    'ssh_key_pub' | 'agent_token' | 'agent_download_url' | 'agent_download_sha256' | 'agent_download_size'
  >,
): string {
  return agentCloudConfig({
    what: 'Gateway',
    sshKeys: [config.ssh_key_pub],
    files: [{ path: VM_GATEWAY_TOKEN_FILE, content: config.agent_token, permissions: '0600' }],
    startScript: {
      path: VM_GATEWAY_START_SCRIPT,
      content: startGatewayScript(agentRuntimeDownloadOf(config)),
    },
    perBootScriptPath: VM_GATEWAY_PER_BOOT_SCRIPT,
    log: VM_GATEWAY_LOG,
  });
}
