/** Deploying and stopping the shim on a host, against a real sshd on loopback (this machine is the host). */
import { existsSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sshdUnavailableReason, startTestSshd, type TestSshd } from './__fixtures__/test-sshd.js';
import { installedRuntimeDirectory, localAgentRuntime } from './agent-runtime-archive.js';
import { deployShim, stopDeployedShim } from './ssh-host-deploy.js';
import type { SshHostAddress } from './ssh-host-probe.js';

function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

const skipReason = existsSync(join(installedRuntimeDirectory(), 'shim.mjs'))
  ? sshdUnavailableReason()
  : 'the agent runtime is not built (@dstack/runner-runtime-linux-x64)';

describe.skipIf(skipReason !== null).each([
  { sftp: true, how: 'over SFTP' },
  { sftp: false, how: 'through cat when the host has no SFTP' },
])('deployShim (real sshd), copying $how', { timeout: 60_000 }, ({ sftp }) => {
  let sshd: TestSshd;
  let directory: string;
  let address: SshHostAddress;

  beforeAll(async () => {
    sshd = await startTestSshd({ sftp });
    directory = await mkdtemp(join(tmpdir(), 'dstack-deploy-'));
    address = { hostname: '127.0.0.1', port: sshd.port, username: 'root', privateKey: sshd.privateKey };
  }, 30_000);

  afterAll(async () => {
    await sshd?.stop();
    if (directory) await rm(directory, { recursive: true, force: true });
  });

  it('starts a shim that answers, and stopping it ends the process and removes its home', async () => {
    const home = join(directory, 'instance');
    const runtimes = join(directory, 'agent-runtime');
    const agentRuntime = await localAgentRuntime();
    const deployed = await deployShim(address, {
      agentRuntime,
      agentRuntimeDir: runtimes,
      homeDir: home,
      runtime: 'process',
      token: 'deployed-shim-token',
    });
    expect(deployed.home).toBe(home);
    // The copy went the way this case is about.
    expect(sshd.log().includes("Starting session: subsystem 'sftp'")).toBe(sftp);
    expect(deployed.resources.cpus).toBeGreaterThan(0);
    expect(isRunning(deployed.pid)).toBe(true);
    const health = await fetch(`http://127.0.0.1:${deployed.port}/api/healthcheck`);
    expect(health.status).toBe(200);
    // The shim requires the token, which only its user may read and no command line shows.
    expect((await fetch(`http://127.0.0.1:${deployed.port}/api/tasks`)).status).toBe(401);
    const tasks = await fetch(`http://127.0.0.1:${deployed.port}/api/tasks`, {
      headers: { authorization: 'Bearer deployed-shim-token' },
    });
    expect(tasks.status).toBe(200);
    expect(statSync(join(home, 'shim-token')).mode & 0o777).toBe(0o600);
    expect(readFileSync(`/proc/${deployed.pid}/cmdline`, 'utf8')).not.toContain('deployed-shim-token');
    // The shim runs on the runtime's node through its loader, not on a node of the host.
    const root = join(runtimes, agentRuntime.key, 'dstack-runtime');
    expect(readlinkSync(`/proc/${deployed.pid}/exe`)).toBe(join(root, 'lib', 'ld-linux-x86-64.so.2'));
    expect(readFileSync(`/proc/${deployed.pid}/cmdline`, 'utf8').split('\0')).toContain(
      join(root, 'shim.mjs'),
    );

    // A second deploy finds the runtime there and copies nothing.
    const uploadsBefore = sshd.log().split("subsystem 'sftp'").length;
    const again = await deployShim(address, {
      agentRuntime,
      agentRuntimeDir: runtimes,
      homeDir: join(directory, 'instance-2'),
      runtime: 'process',
      token: 'deployed-shim-token',
    });
    expect(sshd.log().split("subsystem 'sftp'").length).toBe(uploadsBefore);
    await stopDeployedShim(address, again, { graceMs: 5_000 });

    await stopDeployedShim(address, deployed, { graceMs: 5_000 });
    expect(isRunning(deployed.pid)).toBe(false);
    expect(existsSync(home)).toBe(false);
  });
});
