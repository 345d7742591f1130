/**
 * End to end: a job's environment is what its job spec gives it, dstack's DSTACK_* run variables
 * and the basics a process needs (PATH, HOME, the locale...), never the server's. A real
 * `dstack-server` process holds the admin token and secrets in its environment; a plain member of
 * a project runs a task printing its whole environment on the local backend, once per runtime, and
 * none of the server's variables (names or values) shows in the job's output.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Run } from '@dstack/core';
import { HOST_JOB_VARIABLES } from '@dstack/runner';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dockerMissing } from './emulated-hosts-harness.js';
import { ADMIN_TOKEN, makeTempDir, type ServerApi, serverApi, task, waitFor } from './server-harness.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 300_000 });

const BIN = fileURLToPath(new URL('../dist/bin/dstack-server.js', import.meta.url));
const BUILD_TEST_IMAGE = fileURLToPath(new URL('../../shim/test-image/build-test-image.sh', import.meta.url));
/** The shim's offline Docker test image (a static busybox): what the `docker` project's task runs in. */
const TEST_IMAGE = 'dstack-test/runner-busybox:v2';

const temp = makeTempDir('dstack-job-environment-');
/** The server's whole environment: what a real server holds, with secrets a job must not see. */
const serverEnvironment: Record<string, string> = {
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '',
  DSTACK_SERVER_DIR: join(temp.dir, 'server'),
  DSTACK_SERVER_PORT: '0',
  // The harness's admin token: what the API helpers below call with.
  DSTACK_SERVER_ADMIN_TOKEN: ADMIN_TOKEN,
  JOB_ENVIRONMENT_CANARY: `canary-${randomUUID()}`,
  AWS_SECRET_ACCESS_KEY: `aws-secret-${randomUUID()}`,
};

/**
 * The server's variables (name and value) that appear in `output`, an `env` dump. PATH, HOME and
 * the other basics a job keeps may carry the server's values; values of a character or two (the
 * port `0`) would match anything and are checked by name only.
 */
function serverVariablesIn(output: string): string[] {
  const lines = output.split('\n');
  const kept = HOST_JOB_VARIABLES as readonly string[];
  return Object.entries(serverEnvironment)
    .filter(([name]) => !kept.includes(name))
    .flatMap(([name, value]) => [
      ...(lines.some((line) => line.startsWith(`${name}=`)) ? [name] : []),
      ...(value.length > 2 && output.includes(value) ? [`the value of ${name}`] : []),
    ]);
}

interface ServerProcess {
  child: ChildProcess;
  api: ServerApi;
  exited: Promise<void>;
}

async function startServerProcess(): Promise<ServerProcess> {
  if (!existsSync(BIN)) throw new Error(`${BIN} does not exist: run \`pnpm build\` before these tests`);
  const child = spawn(process.execPath, [BIN], { env: serverEnvironment, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await waitFor('the server to start', () => {
    if (child.exitCode !== null) throw new Error(`dstack-server exited with ${child.exitCode}:\n${output}`);
    return /The server is running at (\S+)/.exec(output)?.[1] ?? null;
  });
  return { child, api: serverApi(url), exited };
}

/** config.yml: project `main` on the local backend's process runtime, `docker` on its Docker runtime. */
function writeServerConfig(): void {
  mkdirSync(serverEnvironment.DSTACK_SERVER_DIR!, { recursive: true });
  // The instances live outside the server directory, so that the job's own paths do not contain it.
  const localBackend = (runtime: string) =>
    `    backends:\n      - type: local\n        runtime: ${runtime}\n        instances_dir: ${join(temp.dir, `${runtime}-instances`)}\n`;
  writeFileSync(
    join(serverEnvironment.DSTACK_SERVER_DIR!, 'config.yml'),
    `projects:\n  - name: main\n${localBackend('process')}  - name: docker\n${localBackend('docker')}`,
  );
}

describe("a plain member's job on the local backend", () => {
  let server: ServerProcess;
  let api: ServerApi;
  let memberToken: string;

  beforeAll(async () => {
    writeServerConfig();
    server = await startServerProcess();
    api = server.api;
    memberToken = await api.createUser('mallory');
    for (const project of ['main', 'docker']) {
      const added = await api.call(`/api/projects/${project}/add_members`, {
        members: [{ username: 'mallory', project_role: 'user' }],
      });
      expect(added.status).toBe(200);
    }
  });

  afterAll(async () => {
    if (server !== undefined) {
      // The shims are detached: delete the fleets so that no instance outlives the test.
      for (const project of ['main', 'docker']) {
        await waitFor(`the fleets of ${project} to be gone`, async () => {
          const fleets = (
            await api.call<Array<{ name: string; status: string }>>(`/api/project/${project}/fleets/list`)
          ).body;
          if (fleets.length === 0) return true;
          const standing = fleets.filter((fleet) => fleet.status !== 'terminating');
          if (standing.length > 0) {
            await api.call(`/api/project/${project}/fleets/delete`, {
              names: standing.map((fleet) => fleet.name),
            });
          }
          return null;
        });
      }
      server.child.kill('SIGTERM');
      await server.exited;
    }
    temp.remove();
  });

  /** Runs `env` as the member in `project`; resolves with the finished run and its output. */
  async function runEnvAsMember(project: string, extra: Record<string, unknown> = {}) {
    const runName = `env-${project}`;
    const applied = await api.call(
      `/api/project/${project}/runs/apply`,
      {
        plan: {
          run_spec: {
            configuration: task(runName, ['env'], { env: { FROM_SPEC: 'spec-value' }, ...extra }),
          },
        },
      },
      memberToken,
    );
    expect(applied.status).toBe(200);
    const run = await waitFor(
      `run ${runName} to finish`,
      async () => {
        const got = await api.call<Run>(
          `/api/project/${project}/runs/get`,
          { run_name: runName },
          memberToken,
        );
        return ['done', 'failed', 'terminated'].includes(got.body.status) ? got.body : null;
      },
      240_000,
    );
    let output = '';
    let nextToken: string | null = null;
    for (;;) {
      const page: { body: { logs: Array<{ message: string }>; next_token: string | null } } = await api.call(
        `/api/project/${project}/logs/poll`,
        { run_name: runName, next_token: nextToken, limit: 1000 },
        memberToken,
      );
      output += page.body.logs.map((entry) => Buffer.from(entry.message, 'base64').toString()).join('');
      if (page.body.logs.length < 1000) break;
      nextToken = page.body.next_token;
    }
    return { run, output };
  }

  it('with the process runtime sees its spec, the DSTACK_* variables and PATH, none of the server', {
    timeout: 300_000,
  }, async () => {
    const { run, output } = await runEnvAsMember('main');
    expect(run.status).toBe('done');
    expect(output).toContain('FROM_SPEC=spec-value\n');
    expect(output).toContain('DSTACK_RUN_NAME=env-main\n');
    expect(output).toContain(`PATH=${serverEnvironment.PATH}\n`);
    expect(serverVariablesIn(output)).toEqual([]);
  });

  it.skipIf(dockerMissing)(
    'with the Docker runtime sees its image and spec, none of the server',
    {
      timeout: 300_000,
    },
    async () => {
      await promisify(execFile)('bash', [BUILD_TEST_IMAGE], { timeout: 300_000 });
      const { run, output } = await runEnvAsMember('docker', { image: TEST_IMAGE });
      expect(run.status).toBe('done');
      expect(output).toContain('FROM_SPEC=spec-value\n');
      expect(output).toContain('DSTACK_RUN_NAME=env-docker\n');
      expect(serverVariablesIn(output)).toEqual([]);
    },
  );
});
