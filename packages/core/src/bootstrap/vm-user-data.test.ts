import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DSTACK_SHIM_HTTP_PORT } from '../agent-protocol/ports.js';
import { VERSION } from '../version.js';
import {
  buildVmUserData,
  MAX_VM_USER_DATA_BYTES,
  SHIM_TARBALL_BUNDLE_PATH,
  shimTarballUrl,
  VM_SHIM_START_SCRIPT,
  VM_SHIM_TOKEN_FILE,
} from './vm-user-data.js';

const config = {
  ssh_keys: [{ public: 'ssh-ed25519 AAAAC3Nza project\n' }],
  agent_token: 'token-xyz',
};

interface CloudConfig {
  ssh_authorized_keys: string[];
  write_files: { path: string; content: string; permissions: string }[];
  runcmd: string[][];
}

function parsed(userData: string): CloudConfig {
  return parse(userData, { version: '1.1' }) as CloudConfig;
}

describe('buildVmUserData', () => {
  it('is #cloud-config authorizing the keys, with the token in a 0600 file and the shim started', () => {
    const userData = buildVmUserData(config);
    expect(userData.startsWith('#cloud-config\n')).toBe(true);
    const cloudConfig = parsed(userData);
    expect(cloudConfig.ssh_authorized_keys).toEqual(['ssh-ed25519 AAAAC3Nza project']);
    const token = cloudConfig.write_files.find((file) => file.path === VM_SHIM_TOKEN_FILE);
    expect(token).toMatchObject({ content: 'token-xyz', permissions: '0600' });
    const script = cloudConfig.write_files.find((file) => file.path === VM_SHIM_START_SCRIPT)?.content ?? '';
    expect(script).toContain(`url='${shimTarballUrl(VERSION)}'`);
    expect(script).toContain(SHIM_TARBALL_BUNDLE_PATH);
    expect(script).toContain(`--http-port ${DSTACK_SHIM_HTTP_PORT}`);
    expect(script).toContain(`--token-file ${VM_SHIM_TOKEN_FILE}`);
    // The token never reaches a command line.
    expect(script).not.toContain('token-xyz');
    expect(cloudConfig.runcmd[0]?.join(' ')).toContain(VM_SHIM_START_SCRIPT);
  });

  it('downloads from agent_download_url when given, and is the same bytes for the same config', () => {
    const withUrl = { ...config, agent_download_url: "http://10.0.0.1:8080/shim's.tgz" };
    const script = parsed(buildVmUserData(withUrl)).write_files[1]?.content ?? '';
    expect(script).toContain(`url='http://10.0.0.1:8080/shim'\\''s.tgz'`);
    expect(buildVmUserData(withUrl)).toBe(buildVmUserData(withUrl));
  });

  it('defaults to the npm tarball of @dstack/shim at core’s version', () => {
    expect(shimTarballUrl('1.2.3')).toBe('https://registry.npmjs.org/@dstack/shim/-/shim-1.2.3.tgz');
  });

  it('refuses user data over the EC2 limit', () => {
    const keys = Array.from({ length: 200 }, (_, i) => ({
      public: `ssh-ed25519 ${'A'.repeat(100)} key${i}`,
    }));
    expect(() => buildVmUserData({ ...config, ssh_keys: keys })).toThrow(
      `${MAX_VM_USER_DATA_BYTES}-byte limit`,
    );
    expect(Buffer.byteLength(buildVmUserData(config))).toBeLessThan(4096);
  });
});
