/**
 * End to end: an SSH fleet whose one host is this machine, reached through a real sshd on
 * loopback with a generated key. Applying it deploys the shim over SSH and records an idle
 * instance with the host's resources; a task placed in the fleet runs there through the SSH
 * tunnel, in a container of its image (the host's Docker answers, so the shim's runtime is Docker) (the project has no backend, so nothing else could run it); deleting the fleet stops
 * the shim and removes its home. A host that cannot be reached or refuses the key fails the
 * apply with a 400 naming the field, and leaves no fleet behind. The same host behind a second
 * sshd acting as its `proxy_jump` (a bastion with a key of its own) is deployed to, runs a task
 * and is released through that bastion; a bastion that cannot be reached or refuses its key
 * fails the apply naming the `proxy_jump` field.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { Fleet } from '@dstack/core';
import { ensureRunnerTestImages, RUNNER_BUSYBOX_TEST_IMAGE } from '@dstack/testing/emulators';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { sshdUnavailableReason, startTestSshd, type TestSshd } from '../src/agents/__fixtures__/test-sshd.js';
import { installedRuntimeDirectory } from '../src/agents/agent-runtime-archive.js';
import { generateProjectSshKeyPair } from '../src/agents/ssh-keys.js';
import { dockerMissing } from './emulated-hosts-harness.js';
import {
  applyTask,
  describeOnDatabase,
  type HarnessServer,
  makeTempDir,
  startHarnessServer,
  task,
  waitFor,
} from './server-harness.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

type ErrorAnswer = { detail: Array<{ msg: string; code: string; fields?: Array<Array<string | number>> }> };

function skipReason(): string | null {
  if (!existsSync(join(installedRuntimeDirectory(), 'shim.mjs'))) {
    return 'the agent runtime is not built: build @dstack/runner-runtime-linux-x64 first';
  }
  if (dockerMissing) return 'Docker does not answer: the shim runs the tasks in their image with it';
  return sshdUnavailableReason();
}

/** The tasks run in an image: this machine has Docker, so the shim's `auto` runtime is Docker. */
const IN_IMAGE = { image: RUNNER_BUSYBOX_TEST_IMAGE };

/** Alive and not a zombie (whoever adopted the detached shim may not reap it at once). */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const noSshd = skipReason() !== null;
// On SQLite only: what it tests is the deployment over SSH, the shim and the task on this host, not
// the database (the slowest of the server's end-to-end files, it ran twice); the fleets and their
// instances are stored on Postgres by fleets.test.ts and fleet-blocks.test.ts.
describeOnDatabase('sqlite', { skip: noSshd })(
  'an SSH fleet on this machine through a real sshd',
  (databaseUrl) => {
    const temp = makeTempDir('dstack-ssh-fleet-');
    const hostDir = join(temp.dir, 'host');
    const keyFile = join(temp.dir, 'id_test');
    const bastionKeyFile = join(temp.dir, 'id_bastion');
    const previousHostDir = process.env.DSTACK_SERVER_SSH_FLEET_DIR;
    let sshd: TestSshd;
    /** The jump host: another sshd on loopback, which forwards to `sshd` and knows only its own key. */
    let bastion: TestSshd;
    let harness: HarnessServer;

    function fleetConfiguration(name: string, overrides: Record<string, unknown> = {}) {
      return {
        type: 'fleet',
        name,
        ssh_config: {
          user: 'root',
          port: sshd.port,
          identity_file: keyFile,
          // What the CLI sends: the content of identity_file.
          ssh_key: { private: sshd.privateKey },
          hosts: ['127.0.0.1'],
          ...overrides,
        },
      };
    }

    /** What the CLI sends for a `proxy_jump` through the bastion. */
    function bastionProxy(overrides: Record<string, unknown> = {}) {
      return {
        hostname: '127.0.0.1',
        port: bastion.port,
        user: 'root',
        identity_file: bastionKeyFile,
        ssh_key: { private: bastion.privateKey },
        ...overrides,
      };
    }

    async function fleetNames(): Promise<string[]> {
      const listed = await harness.call<Fleet[]>('/api/project/main/fleets/list');
      return listed.body.map((fleet) => fleet.name);
    }

    async function instanceRows(): Promise<number> {
      const rows = await harness.server.app.db.selectFrom('instances').select('id').execute();
      return rows.length;
    }

    beforeAll(async () => {
      // Shims live under the test's directory, not under root's home.
      process.env.DSTACK_SERVER_SSH_FLEET_DIR = hostDir;
      await ensureRunnerTestImages();
      sshd = await startTestSshd();
      bastion = await startTestSshd();
      writeFileSync(keyFile, sshd.privateKey, { mode: 0o600 });
      writeFileSync(bastionKeyFile, bastion.privateKey, { mode: 0o600 });
      harness = await startHarnessServer({
        databaseUrl: databaseUrl(),
        dir: temp.dir,
        config: { projects: [{ name: 'main', backends: [] }] },
      });
    });

    afterAll(async () => {
      await harness?.terminateFleetsAndClose();
      await sshd?.stop();
      await bastion?.stop();
      if (previousHostDir === undefined) delete process.env.DSTACK_SERVER_SSH_FLEET_DIR;
      else process.env.DSTACK_SERVER_SSH_FLEET_DIR = previousHostDir;
      temp.remove();
    });

    it('rejects a host that cannot be reached, naming it, and keeps nothing', async () => {
      const answer = await harness.call<ErrorAnswer>('/api/project/main/fleets/apply', {
        plan: { spec: { configuration: fleetConfiguration('unreachable', { port: await closedPort() }) } },
      });
      expect(answer.status).toBe(400);
      expect(answer.body.detail[0]?.msg).toMatch(
        /^ssh_config\.hosts\[0\]: SSH host root@127\.0\.0\.1:\d+ cannot be reached/,
      );
      expect(answer.body.detail[0]?.fields).toEqual([
        ['plan', 'spec', 'configuration', 'ssh_config', 'hosts', 0],
      ]);
      expect(await fleetNames()).toEqual([]);
      expect(await instanceRows()).toBe(0);
    });

    it('rejects a key the host refuses, naming identity_file, and keeps nothing', async () => {
      const answer = await harness.call<ErrorAnswer>('/api/project/main/fleets/apply', {
        plan: {
          spec: {
            configuration: fleetConfiguration('refused', {
              ssh_key: { private: generateProjectSshKeyPair().privateKey },
            }),
          },
        },
      });
      expect(answer.status).toBe(400);
      expect(answer.body.detail[0]?.msg).toMatch(
        /^ssh_config\.identity_file: SSH host root@127\.0\.0\.1:\d+ refused the key/,
      );
      expect(await fleetNames()).toEqual([]);
      expect(await instanceRows()).toBe(0);
      // Nothing was deployed either.
      expect(existsSync(hostDir) ? readdirSync(hostDir) : []).toEqual([]);
    });

    it("splits a host into its blocks, and rejects blocks its CPUs do not divide, naming the host's blocks", async () => {
      const cpus = Number(execFileSync('nproc').toString().trim());
      const rejected = await harness.call<ErrorAnswer>('/api/project/main/fleets/apply', {
        plan: {
          spec: {
            configuration: fleetConfiguration('uneven', {
              hosts: [{ hostname: '127.0.0.1', blocks: cpus + 1 }],
            }),
          },
        },
      });
      expect(rejected.status).toBe(400);
      expect(rejected.body.detail[0]?.fields).toEqual([
        ['plan', 'spec', 'configuration', 'ssh_config', 'hosts', 0, 'blocks'],
      ]);
      expect(await fleetNames()).toEqual([]);
      // The shim deployed before the check was stopped and removed.
      await waitFor('the shim home to be removed', () =>
        (existsSync(hostDir) ? readdirSync(hostDir) : []).length === 0 ? true : null,
      );

      const applied = await harness.call<Fleet>('/api/project/main/fleets/apply', {
        plan: { spec: { configuration: { ...fleetConfiguration('split'), blocks: 'auto' } } },
      });
      expect(applied.status, JSON.stringify(applied.body)).toBe(200);
      expect(applied.body.instances[0]).toMatchObject({ total_blocks: cpus, busy_blocks: 0 });
      const deleted = await harness.call('/api/project/main/fleets/delete', { names: ['split'] });
      expect(deleted.status).toBe(200);
      await waitFor('the fleet to be gone', async () => ((await fleetNames()).length === 0 ? true : null));
      await waitFor('the shim home to be removed', () => (readdirSync(hostDir).length === 0 ? true : null));
    });

    it('deploys the shim, runs a task through the SSH tunnel, and stops the shim once deleted', async () => {
      const applied = await harness.call<Fleet>('/api/project/main/fleets/apply', {
        plan: { spec: { configuration: fleetConfiguration('hosts') } },
      });
      expect(applied.status, JSON.stringify(applied.body)).toBe(200);
      // The key's content is kept encrypted with the instance, never in the fleet's spec.
      expect(JSON.stringify(applied.body)).not.toContain(sshd.privateKey.trim().split('\n')[1]);
      const [instance] = applied.body.instances;
      expect(applied.body.instances).toHaveLength(1);
      expect(instance).toMatchObject({ status: 'idle', backend: 'remote', hostname: '127.0.0.1', price: 0 });
      const memTotalKib = Number(/^MemTotal:\s+(\d+)/m.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1]);
      expect(instance?.instance_type?.resources).toMatchObject({
        cpus: Number(execFileSync('nproc').toString().trim()),
        memory_mib: Math.floor(memTotalKib / 1024),
        gpus: [],
        spot: false,
      });

      // Applying the same hosts again deploys nothing new.
      const reapplied = await harness.call<Fleet>('/api/project/main/fleets/apply', {
        plan: { spec: { configuration: fleetConfiguration('hosts') } },
      });
      expect(reapplied.status).toBe(200);
      expect(reapplied.body.instances.map((each) => each.id)).toEqual([instance?.id]);
      expect(readdirSync(hostDir)).toHaveLength(1);

      const [home] = readdirSync(hostDir);
      const shimState = JSON.parse(readFileSync(join(hostDir, String(home), 'shim.json'), 'utf8')) as {
        pid: number;
      };
      expect(isRunning(shimState.pid)).toBe(true);

      const loginsBeforeRun = sshd.acceptedLogins();
      await applyTask(
        harness,
        task('on-host', ['echo hello from $(hostname) via ssh', 'cat /etc/os-release'], {
          fleets: ['hosts'],
          ...IN_IMAGE,
        }),
      );
      const run = await harness.waitForRun('on-host', ['done', 'failed', 'terminated']);
      expect(run.status).toBe('done');
      const logs = await harness.logs('on-host');
      // In a container of the task's image, on the host's network (and so with its hostname).
      expect(logs).toContain(`hello from ${execFileSync('hostname').toString().trim()} via ssh`);
      expect(logs).toContain('ID=dstack-test-busybox');
      // The server reached the shim and the runner through SSH, not directly on loopback.
      expect(sshd.acceptedLogins()).toBeGreaterThan(loginsBeforeRun);
      const jobData = run.latest_job_submission?.job_provisioning_data;
      expect(jobData).toMatchObject({ backend: 'remote', hostname: '127.0.0.1', ssh_port: sshd.port });

      const deleted = await harness.call('/api/project/main/fleets/delete', { names: ['hosts'] });
      expect(deleted.status).toBe(200);
      await waitFor('the fleet to be gone', async () => ((await fleetNames()).length === 0 ? true : null));
      await waitFor('the shim to stop', () => (isRunning(shimState.pid) ? null : true));
      expect(readdirSync(hostDir)).toEqual([]);
    });

    it('rejects a proxy_jump that cannot be reached, naming it, and keeps nothing', async () => {
      // Rows of earlier tests' fleets stay (soft-deleted); this apply must add none.
      const rowsBefore = await instanceRows();
      const answer = await harness.call<ErrorAnswer>('/api/project/main/fleets/apply', {
        plan: {
          spec: {
            configuration: fleetConfiguration('proxy-unreachable', {
              proxy_jump: bastionProxy({ port: await closedPort() }),
            }),
          },
        },
      });
      expect(answer.status).toBe(400);
      expect(answer.body.detail[0]?.msg).toMatch(
        /^ssh_config\.proxy_jump: SSH proxy root@127\.0\.0\.1:\d+ cannot be reached/,
      );
      expect(answer.body.detail[0]?.fields).toEqual([
        ['plan', 'spec', 'configuration', 'ssh_config', 'proxy_jump'],
      ]);
      expect(await fleetNames()).toEqual([]);
      expect(await instanceRows()).toBe(rowsBefore);
    });

    it("rejects a key the host's proxy_jump refuses, naming its identity_file, and keeps nothing", async () => {
      // Rows of earlier tests' fleets stay (soft-deleted); this apply must add none.
      const rowsBefore = await instanceRows();
      const answer = await harness.call<ErrorAnswer>('/api/project/main/fleets/apply', {
        plan: {
          spec: {
            configuration: fleetConfiguration('proxy-refused', {
              // The host's own proxy_jump replaces a working fleet-wide one.
              proxy_jump: bastionProxy(),
              hosts: [
                {
                  hostname: '127.0.0.1',
                  proxy_jump: bastionProxy({ ssh_key: { private: generateProjectSshKeyPair().privateKey } }),
                },
              ],
            }),
          },
        },
      });
      expect(answer.status).toBe(400);
      expect(answer.body.detail[0]?.msg).toMatch(
        /^ssh_config\.hosts\[0\]\.proxy_jump\.identity_file: SSH proxy root@127\.0\.0\.1:\d+ refused the key/,
      );
      expect(answer.body.detail[0]?.fields).toEqual([
        ['plan', 'spec', 'configuration', 'ssh_config', 'hosts', 0, 'proxy_jump', 'identity_file'],
      ]);
      expect(await fleetNames()).toEqual([]);
      expect(await instanceRows()).toBe(rowsBefore);
      expect(existsSync(hostDir) ? readdirSync(hostDir) : []).toEqual([]);
    });

    it('deploys, runs a task and stops the shim through a proxy_jump', async () => {
      const configuration = fleetConfiguration('behind-bastion', { proxy_jump: bastionProxy() });
      const bastionLoginsBeforeApply = bastion.acceptedLogins();
      const applied = await harness.call<Fleet>('/api/project/main/fleets/apply', {
        plan: { spec: { configuration } },
      });
      expect(applied.status, JSON.stringify(applied.body)).toBe(200);
      expect(bastion.acceptedLogins()).toBeGreaterThan(bastionLoginsBeforeApply);
      // The proxy's key content is kept with the instance only, like the host's.
      expect(JSON.stringify(applied.body)).not.toContain(bastion.privateKey.trim().split('\n')[1]);
      expect(applied.body.instances).toMatchObject([
        { status: 'idle', backend: 'remote', hostname: '127.0.0.1' },
      ]);
      expect(readdirSync(hostDir)).toHaveLength(1);
      const [home] = readdirSync(hostDir);
      const shimState = JSON.parse(readFileSync(join(hostDir, String(home), 'shim.json'), 'utf8')) as {
        pid: number;
      };

      const bastionLoginsBeforeRun = bastion.acceptedLogins();
      await applyTask(
        harness,
        task('via-bastion', ['echo hello via the bastion'], { fleets: ['behind-bastion'], ...IN_IMAGE }),
      );
      const run = await harness.waitForRun('via-bastion', ['done', 'failed', 'terminated']);
      expect(run.status).toBe('done');
      expect(await harness.logs('via-bastion')).toContain('hello via the bastion');
      // The shim and the runner were reached through tunnels that went through the bastion.
      expect(bastion.acceptedLogins()).toBeGreaterThan(bastionLoginsBeforeRun);
      expect(run.latest_job_submission?.job_provisioning_data).toMatchObject({
        hostname: '127.0.0.1',
        ssh_port: sshd.port,
        ssh_proxy: { hostname: '127.0.0.1', port: bastion.port, username: 'root' },
      });

      const bastionLoginsBeforeDelete = bastion.acceptedLogins();
      const deleted = await harness.call('/api/project/main/fleets/delete', { names: ['behind-bastion'] });
      expect(deleted.status).toBe(200);
      await waitFor('the fleet to be gone', async () => ((await fleetNames()).length === 0 ? true : null));
      await waitFor('the shim to stop', () => (isRunning(shimState.pid) ? null : true));
      expect(readdirSync(hostDir)).toEqual([]);
      expect(bastion.acceptedLogins()).toBeGreaterThan(bastionLoginsBeforeDelete);
    });
  },
);
