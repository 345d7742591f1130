/**
 * A server killed in the middle of a cloud launch, on SQLite and on Postgres: `dstack-server` (a
 * child process) applies a GPU task on the emulated AWS, and is killed (SIGKILL) while EC2 has
 * launched the machine but its RunInstances answer is held back (the emulator's `AnswerHeld`), so
 * the server never stored what it launched. A new server on the same database resumes the job:
 * the launch is retried with the same instance id (the ClientToken), EC2 gives back the same
 * machine, the run reaches `done`, and exactly one instance ever existed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Fleet } from '@dstack/core';
import {
  type AgentRuntimeServer,
  type AwsEmulator,
  awsEmulatorServerConfig,
  DockerEmulatedHosts,
  ensureRunnerTestImages,
  type LocalDockerRegistry,
  RUNNER_BUSYBOX_TEST_IMAGE,
  serveAgentRuntime,
  startAwsEmulator,
  startLocalDockerRegistry,
} from '@dstack/testing/emulators';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectCloudEmpty } from './cloud-run-helpers.js';
import { dockerMissing } from './emulated-hosts-harness.js';
import {
  ADMIN_TOKEN,
  applyTask,
  describeEachDatabase,
  makeTempDir,
  type ServerApi,
  serverApi,
  waitFor,
} from './server-harness.js';

// The built bin (the suite's `pnpm test` builds first).
const BIN = fileURLToPath(new URL('../dist/bin/dstack-server.js', import.meta.url));

/**
 * The label value of this file's hosts, so the check for leftovers sees no other test's; the
 * hosts' containers are named after it, so a test run beside another on the same Docker meets none of its hosts.
 */
const EMULATOR_NAME = `aws-killed-${process.pid}`;

interface ServerProcess {
  child: ChildProcess;
  api: ServerApi;
  /** Resolves when the process has ended. */
  exited: Promise<void>;
}

/** Starts `dstack-server` on a free port; resolves once it serves, rejects when it exits first. */
async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  if (!existsSync(BIN)) throw new Error(`${BIN} does not exist: run \`pnpm build\` before these tests`);
  const child = spawn(process.execPath, [BIN], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DSTACK_SERVER_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await waitFor(
    'the server to start',
    () => {
      if (child.exitCode !== null) throw new Error(`dstack-server exited with ${child.exitCode}:\n${output}`);
      return /The server is running at (\S+)/.exec(output)?.[1] ?? null;
    },
    120_000,
  );
  return { child, api: serverApi(url), exited };
}

describeEachDatabase.skipIf(dockerMissing)(
  'a server killed mid-launch on the emulated AWS',
  (databaseUrl) => {
    let hosts: DockerEmulatedHosts;
    let tarball: AgentRuntimeServer;
    /** Where the host pulls the task's image from. */
    let registry: LocalDockerRegistry;
    /**
     * The task's image, a 2 MB busybox: the launch is tested, not dstack's base image, which the
     * host (AWS's Deep Learning AMI, nothing pre-pulled) would pull and set a venv up in.
     */
    let image: string;
    let emulator: AwsEmulator;
    const servers: ServerProcess[] = [];
    const temp = makeTempDir('dstack-killed-');

    /** Both servers' settings: one server directory (its config.yml, its SQLite file) and one database. */
    function serverEnv(): Record<string, string> {
      const url = databaseUrl();
      return {
        DSTACK_SERVER_DIR: temp.dir,
        DSTACK_SERVER_ADMIN_TOKEN: ADMIN_TOKEN,
        DSTACK_SHIM_DOWNLOAD_URL: tarball.url,
        ...(url ? { DSTACK_DATABASE_URL: url } : {}),
      };
    }

    beforeAll(async () => {
      hosts = new DockerEmulatedHosts({ emulator: EMULATOR_NAME });
      tarball = await serveAgentRuntime(hosts);
      await ensureRunnerTestImages();
      registry = await startLocalDockerRegistry({ anonymous: true, hosts });
      await registry.push(RUNNER_BUSYBOX_TEST_IMAGE, 'dstack-test/busybox:1');
      image = `${registry.hostsAddress}/dstack-test/busybox:1`;
      emulator = await startAwsEmulator({ hosts, regions: ['us-east-1', 'us-west-2'] });
      writeFileSync(join(temp.dir, 'config.yml'), awsEmulatorServerConfig(emulator));
    }, 300_000);

    afterAll(async () => {
      for (const server of servers) {
        if (server.child.exitCode === null && server.child.signalCode === null) {
          server.child.kill('SIGKILL');
          await server.exited;
        }
      }
      await emulator?.close();
      await hosts?.close();
      await tarball?.close();
      await registry?.stop();
      temp.remove();
    }, 300_000);

    it('resumes the launch on the next server: the same machine, the run done, one instance', async () => {
      emulator.addFault({ code: 'AnswerHeld', action: 'RunInstances', count: 1 });
      const first = await startServerProcess(serverEnv());
      servers.push(first);
      await applyTask(first.api, {
        type: 'task',
        name: 'killed-launch',
        image,
        commands: ['echo the launch survived'],
        resources: { gpu: 'T4' },
      });
      // EC2 has launched the machine; the server waits for an answer it will never read.
      const [held] = await waitFor(
        'the RunInstances answer to be held',
        () => (emulator.heldAnswers().length > 0 ? emulator.heldAnswers() : null),
        120_000,
      );
      expect(held?.action).toBe('RunInstances');
      expect(emulator.launchedMachineCount()).toBe(1);
      first.child.kill('SIGKILL');
      await first.exited;

      const second = await startServerProcess(serverEnv());
      servers.push(second);
      const finished = await second.api.waitForRun(
        'killed-launch',
        ['done', 'failed', 'terminated'],
        300_000,
      );
      expect(finished.status, JSON.stringify(finished.latest_job_submission)).toBe('done');
      expect(await second.api.logs('killed-launch')).toContain('the launch survived');

      // One machine ever: the one the killed server launched, found again by its ClientToken,
      // which is the id of dstack's instance.
      expect(emulator.launchedMachineCount()).toBe(1);
      const [machine] = emulator.state().instances;
      expect(finished.latest_job_submission?.job_provisioning_data?.instance_id).toBe(machine?.id);
      const fleets = (await second.api.call<Fleet[]>('/api/project/main/fleets/list')).body;
      expect(fleets.flatMap((fleet) => fleet.instances.map((instance) => instance.id))).toEqual([
        held?.clientToken,
      ]);

      expect(
        (await second.api.call('/api/project/main/fleets/delete', { names: ['killed-launch'] })).status,
      ).toBe(200);
      await expectCloudEmpty(emulator, { hostsOf: EMULATOR_NAME });
      second.child.kill('SIGTERM');
      await second.exited;
      expect(second.child.exitCode).toBe(0);
    }, 600_000);
  },
);
