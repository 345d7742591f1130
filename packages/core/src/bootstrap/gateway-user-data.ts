/**
 * The user data of a gateway instance (dstack's gateway `get_gateway_user_data`): the same agent
 * runtime as every VM (`agent-runtime-install.ts`), started on the gateway agent's bundle instead
 * of the shim's. cloud-init authorizes the project key (the server reaches the gateway's loopback
 * management API through SSH with it) and runs the start script at every boot; the script keeps the
 * gateway running as dstack's systemd unit does. The certificate is not in the user data: the
 * server sends it over the SSH tunnel once the gateway answers.
 */
import { stringify } from 'yaml';
import { DSTACK_GATEWAY_API_PORT } from '../agent-protocol/gateway-api.js';
import type { GatewayReplicaConfiguration } from '../models/gateways.js';
import {
  type AgentRuntimeDownload,
  agentRuntimeInstallLines,
  agentRuntimeTarballUrl,
} from './agent-runtime-install.js';
import { MAX_VM_USER_DATA_BYTES, VM_AGENT_RUNTIME_DIRECTORY } from './vm-user-data.js';

/** The gateway agent's bundle in the agent runtime, beside `shim.mjs`. */
export const AGENT_RUNTIME_GATEWAY_FILE = 'gateway.mjs';
/** Where the gateway keeps its state (certificate, services) across restarts; root's, 0700. */
export const VM_GATEWAY_HOME = '/root/.dstack/gateway';
export const VM_GATEWAY_START_SCRIPT = '/usr/local/lib/dstack/start-gateway.sh';
export const VM_GATEWAY_LOG = '/var/log/dstack-gateway.log';
const VM_GATEWAY_PER_BOOT_SCRIPT = '/var/lib/cloud/scripts/per-boot/dstack-gateway';

function startGatewayScript(download: AgentRuntimeDownload): string {
  return `#!/bin/sh
# dstack gateway bootstrap: get the agent runtime and keep the gateway running (written by cloud-init).
${agentRuntimeInstallLines(download, VM_AGENT_RUNTIME_DIRECTORY)}mkdir -p ${VM_GATEWAY_HOME} && chmod 0700 ${VM_GATEWAY_HOME}
while true; do
  "$@" "$root/${AGENT_RUNTIME_GATEWAY_FILE}" --home ${VM_GATEWAY_HOME} --api-port ${DSTACK_GATEWAY_API_PORT}
  sleep 3
done
`;
}

/** The `#cloud-config` for one gateway replica. Throws when it exceeds `MAX_VM_USER_DATA_BYTES`. */
export function buildGatewayUserData(
  config: Pick<
    GatewayReplicaConfiguration,
    'ssh_key_pub' | 'agent_download_url' | 'agent_download_sha256' | 'agent_download_size'
  >,
): string {
  const download: AgentRuntimeDownload = {
    url: config.agent_download_url ?? agentRuntimeTarballUrl(),
    sha256: config.agent_download_sha256 ?? null,
    size: config.agent_download_size ?? null,
  };
  const cloudConfig = {
    ssh_authorized_keys: [config.ssh_key_pub.trim()],
    write_files: [
      {
        path: VM_GATEWAY_START_SCRIPT,
        content: startGatewayScript(download),
        permissions: '0700',
        owner: 'root:root',
      },
      {
        path: VM_GATEWAY_PER_BOOT_SCRIPT,
        content: `#!/bin/sh\nnohup ${VM_GATEWAY_START_SCRIPT} >>${VM_GATEWAY_LOG} 2>&1 </dev/null &\n`,
        permissions: '0700',
        owner: 'root:root',
      },
    ],
  };
  const userData = `#cloud-config\n${stringify(cloudConfig, { lineWidth: 0 })}`;
  const size = Buffer.byteLength(userData, 'utf8');
  if (size > MAX_VM_USER_DATA_BYTES) {
    throw new Error(
      `Gateway user data is ${size} bytes, over the ${MAX_VM_USER_DATA_BYTES}-byte limit of EC2`,
    );
  }
  return userData;
}
