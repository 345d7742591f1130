import { expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  AGENT_RUNTIME_GATEWAY_FILE,
  buildGatewayUserData,
  VM_GATEWAY_START_SCRIPT,
  VM_GATEWAY_TOKEN_FILE,
} from './gateway-user-data.js';

interface CloudConfig {
  ssh_authorized_keys: string[];
  write_files: { path: string; content: string; permissions: string; owner: string }[];
}

it("gives the gateway agent its token in a root-only file, never on the agent's command line", () => {
  const userData = buildGatewayUserData({
    ssh_key_pub: 'ssh-ed25519 AAAAC3Nza project\n',
    agent_token: 'gateway-token-xyz',
  });
  const cloudConfig = parse(userData, { version: '1.1' }) as CloudConfig;
  expect(cloudConfig.ssh_authorized_keys).toEqual(['ssh-ed25519 AAAAC3Nza project']);
  expect(cloudConfig.write_files.find((file) => file.path === VM_GATEWAY_TOKEN_FILE)).toEqual({
    path: VM_GATEWAY_TOKEN_FILE,
    content: 'gateway-token-xyz',
    permissions: '0600',
    owner: 'root:root',
  });
  const script = cloudConfig.write_files.find((file) => file.path === VM_GATEWAY_START_SCRIPT)?.content ?? '';
  expect(script).toContain(`"$root/${AGENT_RUNTIME_GATEWAY_FILE}"`);
  expect(script).toContain(`--token-file ${VM_GATEWAY_TOKEN_FILE}`);
  expect(script).not.toContain('gateway-token-xyz');
});
