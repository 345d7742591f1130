import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TaskConfig, type TaskConfigInput, TaskConfigSchema } from '@dstack/core/agent-protocol';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isMountPoint, unmountBlockVolume } from '../block-volumes.js';
import { type StartedTask, TaskStartError } from '../task-runtime.js';
import { prepareDockerForTests, TEST_IMAGE } from './__fixtures__/docker-test-environment.js';
import { TASK_ID_LABEL } from './container-spec.js';
import { DockerEngineClient, DockerEngineError } from './docker-engine-client.js';
import { createDockerRuntime, type DockerTaskRuntime } from './docker-runtime.js';
import { runJob } from './docker-runtime.test.helpers.js';

const docker = await prepareDockerForTests();
if (!docker.available) {
  console.warn(`skipping the Docker runtime tests: ${docker.reason}`);
}

describe.skipIf(!docker.available)('Docker runtime against the real daemon', () => {
  let runtime: DockerTaskRuntime;
  const startedTasks: StartedTask[] = [];
  const taskIds: string[] = [];
  const temporaryDirectories: string[] = [];

  async function temporaryDirectory(): Promise<string> {
    const directory = await mkdtemp(join(tmpdir(), 'dstack-docker-test-'));
    temporaryDirectories.push(directory);
    return directory;
  }

  function testTask(overrides: Partial<TaskConfigInput> = {}): TaskConfig {
    const id = randomUUID();
    taskIds.push(id);
    return TaskConfigSchema.parse({ id, name: 'docker-test', image_name: TEST_IMAGE, ...overrides });
  }

  const noEvents = { onStatus: () => undefined };

  beforeAll(() => {
    runtime = createDockerRuntime();
  });

  afterEach(async () => {
    for (const task of startedTasks.splice(0)) await task.remove();
  });

  afterAll(async () => {
    // Whatever a failed test left behind: every container labelled with one of this file's tasks.
    for (const id of taskIds) {
      for (const containerId of await runtime.containers.listByLabel(`${TASK_ID_LABEL}=${id}`)) {
        await runtime.containers.remove(containerId);
      }
    }
    await runtime.close();
    for (const directory of temporaryDirectories) await rm(directory, { recursive: true, force: true });
  });

  it('runs a job in the container to done, then stops and removes the container', async () => {
    const statuses: string[] = [];
    const task = testTask();
    const started = await runtime.start(task, await temporaryDirectory(), {
      onStatus: (status) => statuses.push(status),
    });
    startedTasks.push(started);
    expect(statuses).toEqual(['preparing', 'pulling', 'creating']);
    expect(started.containerName).toBe(`dstack-docker-test-${task.id.slice(0, 8)}`);
    const inspection = await runtime.containers.inspect(started.containerId!);
    expect(inspection.Config.Labels?.[TASK_ID_LABEL]).toBe(task.id);
    expect(inspection.State.Running).toBe(true);

    const result = await runJob(started.runnerPort, [
      'echo hello-from-container',
      'cat /etc/hostname || true',
    ]);
    expect(result.states.at(-1)?.state).toBe('done');
    expect(result.output.split('\n')).toContain('hello-from-container');

    await started.stop(10);
    // The init process passes SIGTERM on to the runner, which shuts down cleanly.
    expect(await started.exited).toEqual({ exitCode: 0 });
    expect((await runtime.containers.inspect(started.containerId!)).State.Running).toBe(false);
    await started.stop(1);

    await started.remove();
    const inspectError = await runtime.containers.inspect(started.containerId!).catch((error) => error);
    expect(inspectError).toBeInstanceOf(DockerEngineError);
    expect((inspectError as DockerEngineError).statusCode).toBe(404);
    await started.remove();
    await started.stop(1);
  }, 120_000);

  it("starts the container's runner with the task's token, kept from the job", async () => {
    const task = testTask();
    const started = await runtime.start(
      task,
      await temporaryDirectory(),
      noEvents,
      { gpuIds: null },
      { runnerToken: 'container-runner-token' },
    );
    startedTasks.push(started);
    await expect(runJob(started.runnerPort, ['echo no'])).rejects.toMatchObject({ statusCode: 401 });
    const result = await runJob(
      started.runnerPort,
      ['echo "token=[$DSTACK_RUNNER_TOKEN]"'],
      'container-runner-token',
    );
    expect(result.output.split('\n')).toContain('token=[]');
  }, 120_000);

  it('passes the task env and bind-mounts the home and instance directories', async () => {
    const shared = await temporaryDirectory();
    await writeFile(join(shared, 'from-host.txt'), 'written-on-the-host\n');
    const homeDir = await temporaryDirectory();
    const task = testTask({
      env: { DSTACK_TEST_MARKER: 'marker-value' },
      instance_mounts: [
        { instance_path: shared, path: '/mnt/shared' },
        { instance_path: join(shared, 'missing'), path: '/mnt/optional', optional: true },
      ],
    });
    const started = await runtime.start(task, homeDir, noEvents);
    startedTasks.push(started);

    const result = await runJob(started.runnerPort, [
      'echo "marker=$DSTACK_TEST_MARKER"',
      'cat /mnt/shared/from-host.txt',
      'echo written-in-the-container > /mnt/shared/from-container.txt',
      'test ! -e /mnt/optional && echo optional-mount-skipped',
    ]);
    expect(result.states.at(-1)?.state).toBe('done');
    const lines = result.output.split('\n');
    expect(lines).toContain('marker=marker-value');
    expect(lines).toContain('written-on-the-host');
    expect(lines).toContain('optional-mount-skipped');
    expect(await readFile(join(shared, 'from-container.txt'), 'utf8')).toBe('written-in-the-container\n');
  }, 120_000);

  it.skipIf(process.getuid?.() !== 0)(
    'mounts a block volume formatted on first use at its path, and unmounts it when the task stops',
    async () => {
      // A real block device: a sparse file on a loop device, as the AWS emulator attaches.
      const directory = await temporaryDirectory();
      const backing = join(directory, 'volume.img');
      await writeFile(backing, '');
      await truncate(backing, 64 * 1024 * 1024);
      const loop = execFileSync('losetup', ['-f', '--show', backing], { encoding: 'utf8' }).trim();
      const volumesDirectory = join(directory, 'volumes');
      const volumeRuntime = createDockerRuntime({ volumesDirectory });
      try {
        const task = testTask({
          volumes: [
            { backend: 'aws', name: 'data', volume_id: 'vol-0test', device_name: loop, init_fs: true },
          ],
          volume_mounts: [{ name: 'data', path: '/data' }],
        });
        const started = await volumeRuntime.start(task, await temporaryDirectory(), noEvents);
        const result = await runJob(started.runnerPort, [
          'echo on-the-volume > /data/kept.txt',
          'df -T /data',
        ]);
        expect(result.states.at(-1)?.state).toBe('done');
        expect(result.output).toContain('ext4');
        await started.stop(10);
        expect(await isMountPoint(join(volumesDirectory, 'data'))).toBe(false);
        await started.remove();
        expect(
          execFileSync('debugfs', ['-R', 'cat /kept.txt', loop], {
            encoding: 'utf8',
            stdio: ['ignore', 'pipe', 'ignore'],
          }),
        ).toBe('on-the-volume\n');
      } finally {
        await volumeRuntime.close();
        await unmountBlockVolume(join(volumesDirectory, 'data')).catch(() => undefined);
        execFileSync('losetup', ['-d', loop]);
      }
    },
    120_000,
  );

  it.each([
    ['a uid', '65534'],
    ['a name from the image', 'nobody'],
  ])(
    'runs the job as container_user given as %s while the runner stays root',
    async (_how, user) => {
      const homeDir = await temporaryDirectory();
      const started = await runtime.start(testTask({ container_user: user }), homeDir, noEvents);
      startedTasks.push(started);
      expect((await runtime.containers.inspect(started.containerId!)).Config.User).toBe('0:0');

      const result = await runJob(started.runnerPort, [
        'echo "uid=$(id -u) gid=$(id -g) home=$HOME user=$USER"',
        // The job's shell is the runner's child: the runner's own uid is in its parent's status.
        'awk \'/^Uid:/ { print "runner-uid=" $2 }\' /proc/$PPID/status',
        'echo from-the-job > written.txt',
      ]);
      expect(result.states.at(-1)?.state).toBe('done');
      const lines = result.output.split('\n');
      // The image's passwd has nobody:x:65534:65534 with home /nonexistent, which becomes /.
      expect(lines).toContain('uid=65534 gid=65534 home=/ user=nobody');
      expect(lines).toContain('runner-uid=0');
      expect((await stat(join(homeDir, 'workflow', 'written.txt'))).uid).toBe(65534);
    },
    120_000,
  );

  it("runs the job as the image's own USER when the task has no container_user", async () => {
    // An image like TEST_IMAGE whose Dockerfile would say `USER 65534`: committed from a container of it.
    const client = new DockerEngineClient();
    const imageName = `dstack-test/runner-base-user:${randomUUID().slice(0, 8)}`;
    const [repo = '', tag = ''] = imageName.split(':');
    const source = await runtime.containers.create(`dstack-user-image-${tag}`, {
      Image: TEST_IMAGE,
      User: '0:0',
      Env: [],
      Cmd: ['/bin/true'],
      Labels: {},
      HostConfig: { NetworkMode: 'host', Init: false, Privileged: false, Mounts: [] },
    });
    try {
      await client.request({
        method: 'POST',
        path: '/commit',
        query: { container: source, repo, tag, changes: 'USER 65534' },
      });
      const started = await runtime.start(
        testTask({ image_name: imageName }),
        await temporaryDirectory(),
        noEvents,
      );
      startedTasks.push(started);
      const result = await runJob(started.runnerPort, ['id -u']);
      expect(result.states.at(-1)?.state).toBe('done');
      expect(result.output).toBe('65534\n');
    } finally {
      for (const task of startedTasks.splice(0)) await task.remove();
      await runtime.containers.remove(source);
      await client
        .request({ method: 'DELETE', path: `/images/${encodeURIComponent(imageName)}` })
        .catch(() => undefined);
      await client.close();
    }
  }, 120_000);

  it('fails the job naming user when container_user is not a user of the image', async () => {
    const started = await runtime.start(
      testTask({ container_user: 'dstack-no-such-user' }),
      await temporaryDirectory(),
      noEvents,
    );
    startedTasks.push(started);
    const result = await runJob(started.runnerPort, ['echo should-not-run']);
    expect(result.output).toBe('');
    expect(result.states.at(-1)).toMatchObject({
      state: 'failed',
      termination_reason: 'executor_error',
      termination_message: 'user "dstack-no-such-user": no user named "dstack-no-such-user" in /etc/passwd',
    });
  }, 120_000);

  it('reports a job that fails inside the container as failed', async () => {
    const started = await runtime.start(testTask(), await temporaryDirectory(), noEvents);
    startedTasks.push(started);
    const result = await runJob(started.runnerPort, ['echo about-to-fail', 'exit 7']);
    expect(result.states.at(-1)).toMatchObject({ state: 'failed', exit_status: 7 });
  }, 120_000);

  it('fails with creating_container_error naming an image that cannot be pulled', async () => {
    // A registry on a closed loopback port: the pull fails at once and nothing leaves the machine.
    const imageName = 'localhost:1/dstack-test/missing-image:latest';
    const statuses: string[] = [];
    const error = await runtime
      .start(testTask({ image_name: imageName }), await temporaryDirectory(), {
        onStatus: (status) => statuses.push(status),
      })
      .catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(TaskStartError);
    expect((error as TaskStartError).reason).toBe('creating_container_error');
    expect((error as TaskStartError).message).toContain(imageName);
    expect(statuses).toEqual(['preparing', 'pulling']);
  }, 60_000);

  it("fails with the container's output when its runner cannot start", async () => {
    const brokenBundle = join(await temporaryDirectory(), 'broken-runner.mjs');
    await writeFile(brokenBundle, "console.error('the runner broke on purpose');\nprocess.exit(3);\n");
    const brokenRuntime = createDockerRuntime({ runnerBundlePath: brokenBundle });
    const task = testTask();
    try {
      const error = await brokenRuntime
        .start(task, await temporaryDirectory(), noEvents)
        .catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(TaskStartError);
      expect((error as TaskStartError).reason).toBe('creating_container_error');
      expect((error as TaskStartError).message).toContain('exited with code 3');
      expect((error as TaskStartError).message).toContain('the runner broke on purpose');
      // The failed container is not left behind.
      expect(await brokenRuntime.containers.listByLabel(`${TASK_ID_LABEL}=${task.id}`)).toEqual([]);
    } finally {
      await brokenRuntime.close();
    }
  }, 60_000);

  it('chooses another port when the runner finds its port taken', async () => {
    // A stand-in runner: the first time it fails as node does on a taken port, then it serves
    // the healthcheck. The marker file lives in the task home, which both attempts share.
    const flakyBundle = join(await temporaryDirectory(), 'flaky-runner.mjs');
    await writeFile(
      flakyBundle,
      [
        "import { existsSync, writeFileSync } from 'node:fs';",
        "import { createServer } from 'node:http';",
        "const port = Number(process.argv[process.argv.indexOf('--http-port') + 1]);",
        "if (!existsSync('/dstack/home/tried')) {",
        "  writeFileSync('/dstack/home/tried', String(port));",
        "  console.error('Error: listen EADDRINUSE: address already in use 127.0.0.1:' + port);",
        '  process.exit(1);',
        '}',
        'createServer((_request, response) => response.end(\'{"service":"dstack-runner","version":"0"}\'))',
        "  .listen(port, '127.0.0.1');",
        "process.on('SIGTERM', () => process.exit(0));",
      ].join('\n'),
    );
    const flakyRuntime = createDockerRuntime({ runnerBundlePath: flakyBundle });
    const task = testTask();
    const homeDir = await temporaryDirectory();
    let started: StartedTask | undefined;
    try {
      started = await flakyRuntime.start(task, homeDir, noEvents);
      const firstPort = Number(await readFile(join(homeDir, 'tried'), 'utf8'));
      expect(started.runnerPort).not.toBe(firstPort);
      expect(await flakyRuntime.containers.listByLabel(`${TASK_ID_LABEL}=${task.id}`)).toEqual([
        started.containerId,
      ]);
    } finally {
      await started?.remove();
      await flakyRuntime.close();
    }
  }, 60_000);

  it('replaces a container left from an earlier attempt at the same task', async () => {
    const task = testTask();
    const first = await runtime.start(task, await temporaryDirectory(), noEvents);
    startedTasks.push(first);
    const second = await runtime.start(task, await temporaryDirectory(), noEvents);
    startedTasks.push(second);
    expect(second.containerName).toBe(first.containerName);
    expect(second.containerId).not.toBe(first.containerId);
    // Force removal kills the old container: 128 + SIGKILL.
    expect(await first.exited).toEqual({ exitCode: 137 });
    const result = await runJob(second.runnerPort, ['echo second-attempt']);
    expect(result.output.split('\n')).toContain('second-attempt');
  }, 120_000);
});
