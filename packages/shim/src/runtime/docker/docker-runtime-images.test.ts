import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TaskConfig, type TaskConfigInput, TaskConfigSchema } from '@dstack/core/agent-protocol';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { StartedTask } from '../task-runtime.js';
import {
  MUSL_TEST_IMAGE,
  prepareDockerForTests,
  prepareMuslTestImage,
  TEST_IMAGE,
} from './__fixtures__/docker-test-environment.js';
import { TASK_ID_LABEL } from './container-spec.js';
import { createDockerRuntime, type DockerTaskRuntime } from './docker-runtime.js';
import { runJob } from './docker-runtime.test.helpers.js';

// The runner must start in whatever image a job names. These images have no glibc: the test
// image is a static busybox with no shared library at all, its musl flavour has Alpine's musl
// loader and libc and a program linked against them. The runner comes in as the portable runtime.
const docker = await prepareDockerForTests();
const musl = docker.available ? await prepareMuslTestImage() : docker;
for (const environment of [docker, musl]) {
  if (!environment.available) console.warn(`skipping the Docker image tests: ${environment.reason}`);
}

/** What a job prints about its environment: nothing of the runtime may reach the image's programs. */
const ENVIRONMENT_PROBE = 'env | grep -E "^LD_|dstack/runtime" || echo no-runtime-in-environment';

describe.skipIf(!docker.available || !musl.available)(
  "the runner in images the host's node cannot load in",
  () => {
    let runtime: DockerTaskRuntime;
    let cacheDirectory: string;
    const startedTasks: StartedTask[] = [];
    const taskIds: string[] = [];
    const homes: string[] = [];

    beforeAll(async () => {
      // A cache of its own: the first task builds the runtime from nothing.
      cacheDirectory = join(await mkdtemp(join(tmpdir(), 'dstack-runtime-cache-')), 'cache');
      runtime = createDockerRuntime({ runtimeCacheDirectory: cacheDirectory });
    });

    afterEach(async () => {
      for (const task of startedTasks.splice(0)) await task.remove();
    });

    afterAll(async () => {
      for (const id of taskIds) {
        for (const containerId of await runtime.containers.listByLabel(`${TASK_ID_LABEL}=${id}`)) {
          await runtime.containers.remove(containerId);
        }
      }
      await runtime.close();
      for (const directory of [...homes, join(cacheDirectory, '..')]) {
        await rm(directory, { recursive: true, force: true });
      }
    });

    async function start(overrides: Partial<TaskConfigInput>): Promise<StartedTask> {
      const id = randomUUID();
      taskIds.push(id);
      const task: TaskConfig = TaskConfigSchema.parse({ id, name: 'image-test', ...overrides });
      const home = await mkdtemp(join(tmpdir(), 'dstack-image-test-'));
      homes.push(home);
      const started = await runtime.start(task, home, { onStatus: () => undefined });
      startedTasks.push(started);
      return started;
    }

    it('runs a job in a static busybox image with no shared library', async () => {
      const started = await start({ image_name: TEST_IMAGE });
      const result = await runJob(started.runnerPort, [
        'cat /etc/os-release',
        // The image itself holds no library (the runtime's are under /dstack/runtime only).
        'echo "libraries=$(find / -xdev -name "*.so*" | wc -l)"',
        'ls /',
        ENVIRONMENT_PROBE,
      ]);
      expect(result.states.at(-1)?.state).toBe('done');
      const lines = result.output.split('\n');
      expect(lines).toContain('ID=dstack-test-busybox');
      expect(lines).toContain('libraries=0');
      expect(lines).toEqual(expect.arrayContaining(['bin', 'etc', 'tmp', 'dstack']));
      expect(lines).toContain('no-runtime-in-environment');
      // Built once, in the cache the runtime was given.
      expect(await readdir(cacheDirectory)).toHaveLength(1);
    }, 120_000);

    it('runs a job in a musl image whose own dynamically linked programs work', async () => {
      const started = await start({ image_name: MUSL_TEST_IMAGE });
      const result = await runJob(started.runnerPort, [
        'cat /etc/os-release',
        'ls /lib',
        'hello-musl one two',
        ENVIRONMENT_PROBE,
        // The runtime is mounted read-only: a job cannot change what the runner runs from.
        'touch /dstack/runtime/x 2>/dev/null && echo runtime-writable || echo runtime-read-only',
      ]);
      expect(result.states.at(-1)?.state).toBe('done');
      const lines = result.output.split('\n');
      expect(lines).toContain('ID=dstack-test-musl');
      expect(lines).toContain('ld-musl-x86_64.so.1');
      expect(lines).toContain('hello from musl with 2 argument(s)');
      expect(lines).toContain('no-runtime-in-environment');
      expect(lines).toContain('runtime-read-only');
    }, 120_000);

    it("runs a job as a user with supplementary groups, through the runtime's node", async () => {
      // The user has a supplementary group, so the runner starts its wrapper: another process of
      // its own node, which in the runtime must go through the runtime's loader.
      const started = await start({ image_name: MUSL_TEST_IMAGE, container_user: 'worker' });
      const result = await runJob(started.runnerPort, ['echo "ids=$(id -u) $(id -G)"', 'hello-musl']);
      expect(result.states.at(-1)?.state).toBe('done');
      const lines = result.output.split('\n');
      expect(lines).toContain('ids=1000 1000 2000');
      expect(lines).toContain('hello from musl with 0 argument(s)');
    }, 120_000);
  },
);
