import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DSTACK_SHIM_HTTP_PORT } from '../agent-protocol/ports.js';
import { VERSION } from '../version.js';
import {
  AGENT_BOOTSTRAP_FAILURE_MARKER,
  AGENT_RUNTIME_SHIM_FILE,
  agentRuntimeTarballUrl,
} from './agent-runtime-install.js';
import {
  buildVmBootstrapScript,
  buildVmUserData,
  MAX_VM_USER_DATA_BYTES,
  VM_PER_BOOT_SCRIPT,
  VM_SHIM_LOG,
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
  runcmd?: unknown;
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
    expect(script).toContain(`url='${agentRuntimeTarballUrl(VERSION)}'`);
    expect(script).toContain(`"$root/${AGENT_RUNTIME_SHIM_FILE}"`);
    expect(script).toContain(`--http-port ${DSTACK_SHIM_HTTP_PORT}`);
    expect(script).toContain('--runtime auto --docker-start-timeout 60 --runner-runtime "$root"');
    expect(script).toContain(`--token-file ${VM_SHIM_TOKEN_FILE}`);
    // The image's node is never asked for: the runtime brings its own.
    expect(script).not.toMatch(/command -v node|\bnode \$/);
    // The token never reaches a command line.
    expect(script).not.toContain('token-xyz');
    // Started at every boot (a reboot resumes or reuses the download), not once per instance.
    expect(cloudConfig.runcmd).toBeUndefined();
    const perBoot = cloudConfig.write_files.find((file) => file.path === VM_PER_BOOT_SCRIPT);
    expect(perBoot?.content).toContain(`nohup ${VM_SHIM_START_SCRIPT} >>${VM_SHIM_LOG}`);
  });

  it('passes the digest the server knows to the host, which checks it', () => {
    const sha256 = 'a'.repeat(64);
    const userData = buildVmUserData({ ...config, agent_download_sha256: sha256, agent_download_size: 4242 });
    const script = parsed(userData).write_files[1]?.content ?? '';
    expect(script).toContain(`sha=${sha256} size=4242`);
  });

  it('downloads from agent_download_url when given, and is the same bytes for the same config', () => {
    const withUrl = { ...config, agent_download_url: "http://10.0.0.1:8080/shim's.tgz" };
    const script = parsed(buildVmUserData(withUrl)).write_files[1]?.content ?? '';
    expect(script).toContain(`url='http://10.0.0.1:8080/shim'\\''s.tgz'`);
    expect(buildVmUserData(withUrl)).toBe(buildVmUserData(withUrl));
  });

  it('defaults to the npm tarball of the agent runtime package at core’s version', () => {
    expect(agentRuntimeTarballUrl('1.2.3')).toBe(
      'https://registry.npmjs.org/@dstack/runner-runtime-linux-x64/-/runner-runtime-linux-x64-1.2.3.tgz',
    );
  });

  it("runs the backend's setup commands first, in order, and stops the bootstrap at a failed one", () => {
    const directory = mkdtempSync(join(tmpdir(), 'vm-user-data-'));
    try {
      const out = join(directory, 'out');
      const commands = [`echo "one $HOME" >>${out}`, `echo 'two' >>${out}; false`, `echo never >>${out}`];
      const userData = buildVmUserData(config, { backendCommands: commands });
      const script =
        parsed(userData).write_files.find((file) => file.path === VM_SHIM_START_SCRIPT)?.content ?? '';
      // Before the agent runtime is fetched (dstack chains them before the shim's commands).
      expect(script.indexOf(commands[0] as string)).toBeLessThan(script.indexOf('url='));
      const run = spawnSync('sh', ['-c', script], { env: { HOME: '/home/x', PATH: process.env.PATH } });
      expect(run.status).toBe(1);
      expect(run.stdout.toString()).toBe(
        `${AGENT_BOOTSTRAP_FAILURE_MARKER} the backend's setup command failed: ${commands[1]}\n`,
      );
      expect(readFileSync(out, 'utf8')).toBe('one /home/x\ntwo\n');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
    expect(parsed(buildVmUserData(config)).write_files[1]?.content).not.toContain('setup command');
    expect(() => buildVmUserData(config, { backendCommands: [' '] })).toThrow('backend commands[0]');
  });

  it('refuses user data over the EC2 limit', () => {
    const keys = Array.from({ length: 200 }, (_, i) => ({
      public: `ssh-ed25519 ${'A'.repeat(100)} key${i}`,
    }));
    expect(() => buildVmUserData({ ...config, ssh_keys: keys })).toThrow(
      `${MAX_VM_USER_DATA_BYTES}-byte limit`,
    );
    expect(Buffer.byteLength(buildVmUserData(config))).toBeLessThan(6 * 1024);
  });
});

describe('buildVmBootstrapScript', () => {
  const script = buildVmBootstrapScript({
    agent_token: 'token-xyz',
    agent_download_url: 'http://10.0.0.1/rt.tgz',
  });

  it("carries the backend's setup commands in its start script", () => {
    const withSetup = buildVmBootstrapScript(
      { agent_token: 'token-xyz', agent_download_url: 'http://10.0.0.1/rt.tgz' },
      { backendCommands: ['service ssh restart'] },
    );
    expect(withSetup).toContain("(\nservice ssh restart\n) || { echo '");
    expect(script).not.toContain('service ssh restart');
  });

  it('is a valid POSIX shell script', () => {
    const check = spawnSync('sh', ['-n'], { input: script });
    expect(check.stderr.toString()).toBe('');
    expect(check.status).toBe(0);
  });

  it('writes the token root-only and the same start script as the user data, then starts it once', () => {
    expect(script).toContain(
      `(umask 077 && cat >${VM_SHIM_TOKEN_FILE} <<'DSTACK_BOOTSTRAP_EOF'\ntoken-xyz\nDSTACK_BOOTSTRAP_EOF\n)\nchmod 0600`,
    );
    const userData = parsed(buildVmUserData({ ...config, agent_download_url: 'http://10.0.0.1/rt.tgz' }));
    const startScript =
      userData.write_files.find((file) => file.path === VM_SHIM_START_SCRIPT)?.content ?? '';
    expect(script).toContain(
      `(umask 077 && cat >${VM_SHIM_START_SCRIPT} <<'DSTACK_BOOTSTRAP_EOF'\n${startScript}`,
    );
    expect(script).toContain(`cat >${VM_PER_BOOT_SCRIPT} <<`);
    // A second run finds the start script running and changes nothing.
    expect(script.indexOf(`if pgrep -f ${VM_SHIM_START_SCRIPT}`)).toBeLessThan(script.indexOf('cat >'));
    expect(
      script.trimEnd().endsWith(`nohup ${VM_SHIM_START_SCRIPT} >>${VM_SHIM_LOG} 2>&1 </dev/null &`),
    ).toBe(true);
  });
});
