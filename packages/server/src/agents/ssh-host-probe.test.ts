/** The SSH fleet host check against a real sshd on loopback, logging in as root with a generated key. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sshdUnavailableReason, startTestSshd, type TestSshd } from './__fixtures__/test-sshd.js';
import { parseHostProbe, probeSshHost, SshHostProbeError } from './ssh-host-probe.js';
import { generateProjectSshKeyPair } from './ssh-keys.js';

describe('parseHostProbe', () => {
  it('reads resources and NVIDIA GPUs', () => {
    const resources = parseHostProbe(
      [
        'cpus=8',
        'memory_kib=16384000',
        'disk_kib=102400000',
        'arch=aarch64',
        'gpu=NVIDIA A100-SXM4-80GB, 81920',
        'gpu=NVIDIA A100-SXM4-80GB, 81920',
      ].join('\n'),
    );
    expect(resources).toEqual({
      cpus: 8,
      memory_mib: 16000,
      disk_mib: 100000,
      cpu_arch: 'arm',
      gpus: [
        { name: 'A100-SXM4-80GB', memory_mib: 81920, vendor: 'nvidia' },
        { name: 'A100-SXM4-80GB', memory_mib: 81920, vendor: 'nvidia' },
      ],
    });
  });

  it('names a fact the host did not report', () => {
    expect(() => parseHostProbe('cpus=2\nmemory_kib=\n')).toThrow('the host did not report memory_kib');
  });
});

const skipReason = sshdUnavailableReason();

describe.skipIf(skipReason !== null)('probeSshHost (real sshd)', () => {
  let sshd: TestSshd;
  /** A jump host in front of `sshd`: another sshd with a key of its own. */
  let bastion: TestSshd;

  beforeAll(async () => {
    sshd = await startTestSshd();
    bastion = await startTestSshd();
  });

  afterAll(async () => {
    await sshd?.stop();
    await bastion?.stop();
  });

  function behindBastion(proxyKey: string, port = sshd.port) {
    return {
      hostname: '127.0.0.1',
      port,
      username: 'root',
      privateKey: sshd.privateKey,
      proxy: { hostname: '127.0.0.1', port: bastion.port, username: 'root', privateKey: proxyKey },
    };
  }

  it("reads this machine's resources over SSH", async () => {
    const resources = await probeSshHost({
      hostname: 'localhost',
      port: sshd.port,
      username: 'root',
      privateKey: sshd.privateKey,
    });
    const memTotalKib = Number(/^MemTotal:\s+(\d+)/m.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1]);
    const diskKib = Number(
      execFileSync('df', ['-Pk', '/']).toString().split('\n')[1]?.trim().split(/\s+/)[1],
    );
    expect(resources.cpus).toBe(Number(execFileSync('nproc').toString().trim()));
    expect(resources.cpus).toBeLessThanOrEqual(cpus().length);
    expect(resources.memory_mib).toBe(Math.floor(memTotalKib / 1024));
    expect(resources.disk_mib).toBe(Math.floor(diskKib / 1024));
  });

  it('names the host when it refuses the key', async () => {
    const failure = await probeSshHost({
      hostname: 'localhost',
      port: sshd.port,
      username: 'root',
      privateKey: generateProjectSshKeyPair().privateKey,
    }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(SshHostProbeError);
    expect(failure).toMatchObject({ host: 'localhost', reason: 'authentication' });
    expect((failure as Error).message).toContain(`root@localhost:${sshd.port} refused the key`);
  });

  it("logs in through a proxy with the proxy's own key, and ends the proxy's session with the host's", async () => {
    const bastionLogins = bastion.acceptedLogins();
    const resources = await probeSshHost(behindBastion(bastion.privateKey));
    expect(resources.cpus).toBe(Number(execFileSync('nproc').toString().trim()));
    expect(bastion.acceptedLogins() - bastionLogins).toBe(1);
    await vi.waitFor(async () => expect(await bastion.sessionPids()).toEqual([]), { timeout: 4_000 });
  });

  it('names the proxy when it refuses its key', async () => {
    const failure = await probeSshHost(behindBastion(generateProjectSshKeyPair().privateKey)).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(SshHostProbeError);
    expect(failure).toMatchObject({ host: '127.0.0.1', reason: 'authentication', hop: 'proxy' });
    expect((failure as Error).message).toContain(`SSH proxy root@127.0.0.1:${bastion.port} refused the key`);
  });

  it('names the host when the proxy cannot reach it', async () => {
    const failure = await probeSshHost(behindBastion(bastion.privateKey, 1)).catch((error: unknown) => error);
    expect(failure).toMatchObject({ host: '127.0.0.1', reason: 'unreachable', hop: 'host' });
    expect((failure as Error).message).toMatch(
      new RegExp(
        `^SSH host root@127\\.0\\.0\\.1:1 cannot be reached: the SSH proxy root@127\\.0\\.0\\.1:${bastion.port} cannot open a connection to it`,
      ),
    );
  });

  it('names the host when it cannot be reached', async () => {
    await sshd.stop();
    const failure = await probeSshHost({
      hostname: 'localhost',
      port: sshd.port,
      username: 'root',
      privateKey: sshd.privateKey,
    }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ host: 'localhost', reason: 'unreachable' });
    expect((failure as Error).message).toContain(`root@localhost:${sshd.port} cannot be reached`);
  });

  it('rejects a key that is not a private key', async () => {
    const failure = await probeSshHost({
      hostname: 'localhost',
      port: 1,
      username: 'root',
      privateKey: 'not a key',
    }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ reason: 'authentication' });
    expect((failure as Error).message).toContain('Cannot parse privateKey');
  });
});
