/** The SSH fleet host check against a real sshd on loopback, logging in as root with a generated key. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
        'node=/usr/bin/node',
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
      node_path: '/usr/bin/node',
    });
  });

  it('names a fact the host did not report', () => {
    expect(() => parseHostProbe('cpus=2\nmemory_kib=\n')).toThrow('the host did not report memory_kib');
  });
});

const skipReason = sshdUnavailableReason();

describe.skipIf(skipReason !== null)('probeSshHost (real sshd)', () => {
  let sshd: TestSshd;

  beforeAll(async () => {
    sshd = await startTestSshd();
  });

  afterAll(async () => {
    await sshd?.stop();
  });

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
    expect(resources.node_path).toMatch(/\/node$/);
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
