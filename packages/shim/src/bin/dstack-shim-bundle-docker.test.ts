// The shim as hosts run it, `--runtime auto` on a host whose Docker daemon answers: the bundle
// alone in a directory with the runner's bundle beside it (an SSH host before the agent runtime),
// and from the agent runtime through its own loader (VMs and SSH fleet hosts).
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildPortableRuntime, RunnerClient, runtimeNodeCommand } from '@dstack/runner';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ShimClient } from '../client/shim-client.js';
import { SHIM_BUNDLE_PATH, SHIM_RUNNER_BUNDLE_PATH } from '../paths.js';
import { prepareDockerForTests, TEST_IMAGE } from '../runtime/docker/__fixtures__/docker-test-environment.js';
import {
  buildIfMissing,
  type Child,
  eventually,
  isFinished,
  killChild,
  pullUntil,
  spawnNode,
  submitBody,
  taskConfig,
} from '../testing/shim-test.test.helpers.js';

const docker = await prepareDockerForTests();
if (!docker.available) console.warn(`skipping the bundled shim's Docker test: ${docker.reason}`);

describe.skipIf(!docker.available)('the bundled shim with --runtime auto on a host with Docker', () => {
  let directory: string;
  let shim: Child | undefined;

  beforeAll(async () => {
    buildIfMissing(SHIM_BUNDLE_PATH, '@dstack/shim');
    directory = await mkdtemp(join(tmpdir(), 'dstack-shim-bundle-'));
  }, 180_000);

  afterEach(async () => {
    await killChild(shim);
    shim = undefined;
  });

  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('runs a job in the image the task names, with the runner bundle it was given', async () => {
    const dist = join(directory, 'package', 'dist');
    await mkdir(dist, { recursive: true });
    await copyFile(SHIM_BUNDLE_PATH, join(dist, 'dstack-shim.bundle.mjs'));
    await copyFile(SHIM_RUNNER_BUNDLE_PATH, join(dist, 'dstack-runner.bundle.mjs'));
    const started = spawnNode(join(dist, 'dstack-shim.bundle.mjs'), [
      ...shimArguments(join(directory, 'home')),
      '--runner-bundle',
      join(dist, 'dstack-runner.bundle.mjs'),
      '--runtime-cache',
      join(directory, 'runtime-cache'),
    ]);
    shim = started.child;
    await runJobInTestImage(join(directory, 'home'), started.output);
  }, 120_000);

  it('runs a job from the agent runtime: the shim started through its loader mounts that same runtime', async () => {
    // The agent runtime's layout (@dstack/runner-runtime-linux-x64): a portable runtime with the
    // shim bundle beside the runner's. The shim's node is the loader's child, so it cannot copy
    // itself from process.execPath: `--runner-runtime` hands it the runtime it runs from.
    const root = join(directory, 'agent-runtime');
    const runtime = await buildPortableRuntime(root, { runnerBundlePath: SHIM_RUNNER_BUNDLE_PATH });
    await copyFile(SHIM_BUNDLE_PATH, join(root, 'shim.mjs'));
    const home = join(directory, 'agent-home');
    const started = spawnNode(
      join(root, 'shim.mjs'),
      [...shimArguments(home), '--runner-runtime', root],
      { PATH: process.env.PATH },
      runtimeNodeCommand(runtime.manifest, root),
    );
    shim = started.child;
    await runJobInTestImage(home, started.output);
  }, 120_000);

  function shimArguments(home: string): string[] {
    return ['--home', home, '--http-port', '0', '--runtime', 'auto'];
  }

  async function runJobInTestImage(home: string, output: () => string): Promise<void> {
    const state = await eventually(async () => {
      if (shim?.exitCode !== null) throw new Error(`the shim exited: ${output()}`);
      return readFile(join(home, 'shim.json'), 'utf8').then(
        (text) => JSON.parse(text) as { http_port: number; runtime: string },
        () => undefined,
      );
    }, 'shim.json');
    expect(state.runtime).toBe('docker');

    const client = new ShimClient(`http://127.0.0.1:${state.http_port}`);
    await client.submitTask(taskConfig('bundled', { image_name: TEST_IMAGE }));
    const task = await eventually(
      async () => {
        const info = await client.getTask('bundled');
        if (info?.status === 'terminated') throw new Error(`the task ended: ${info.termination_message}`);
        return info?.status === 'running' ? info : undefined;
      },
      'the task to run',
      60_000,
    );
    const runner = new RunnerClient(`http://127.0.0.1:${task.ports[0]!.host}`);
    await runner.submit(
      submitBody(['cat /etc/os-release 2>/dev/null | head -1 || true', 'busybox | head -1']),
    );
    await runner.run();
    const job = await pullUntil(runner, isFinished);
    expect(job.states.at(-1)?.state).toBe('done');
    // The busybox image's own tools, not this host's.
    expect(job.output).toMatch(/BusyBox/);
    await client.terminateTask('bundled', { termination_reason: 'done_by_runner', timeout: 2 });
    await client.removeTask('bundled');
  }
});
