import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TaskInfo } from '@dstack/core/agent-protocol';
import { deriveRunnerToken } from '@dstack/core/agent-protocol';
import { RunnerClient } from '@dstack/runner';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ShimClient } from '../client/shim-client.js';
import { SHIM_BIN_PATH } from '../paths.js';
import {
  buildIfMissing,
  type Child,
  eventually,
  isFinished,
  killChild,
  processExists,
  pullUntil,
  spawnNode,
  submitBody,
  taskConfig,
  waitForExit,
} from '../testing/shim-test.test.helpers.js';

let homeDir: string;
let shimProcess: Child | undefined;
let output: () => string = () => '';

beforeAll(() => {
  buildIfMissing(SHIM_BIN_PATH, '@dstack/shim');
}, 180_000);

beforeEach(() => {
  homeDir = mkdtempSync(join(tmpdir(), 'dstack-shim-bin-'));
});

afterEach(async () => {
  await killChild(shimProcess);
  shimProcess = undefined;
  rmSync(homeDir, { recursive: true, force: true });
});

interface ShimState {
  pid: number;
  http_port: number;
  version: string;
  runtime: string;
}

/** Starts the built shim with the process runtime; resolves with its shim.json once written. */
async function startShimProcess(
  extraArgs: string[] = [],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ state: ShimState; client: ShimClient; url: string }> {
  const started = spawnNode(
    SHIM_BIN_PATH,
    ['--http-port', '0', '--home', homeDir, '--runtime', 'process', ...extraArgs],
    env,
  );
  shimProcess = started.child;
  output = started.output;
  const stateFile = join(homeDir, 'shim.json');
  const state = await eventually(() => {
    if (shimProcess?.exitCode !== null) {
      throw new Error(`the shim exited: ${output()}`);
    }
    return existsSync(stateFile) ? (JSON.parse(readFileSync(stateFile, 'utf8')) as ShimState) : undefined;
  }, 'shim.json');
  const url = `http://127.0.0.1:${state.http_port}`;
  return { state, client: new ShimClient(url), url };
}

async function runningTask(client: ShimClient, id: string): Promise<TaskInfo> {
  return eventually(async () => {
    const task = await client.getTask(id);
    return task?.status === 'running' ? task : undefined;
  }, `task ${id} to run`);
}

describe('dstack-shim command (process runtime)', () => {
  it('writes shim.json, runs a task to done, terminates and removes it, and exits 0 on shutdown', async () => {
    const { state, client } = await startShimProcess();
    expect(state).toEqual({
      pid: shimProcess!.pid,
      http_port: expect.any(Number),
      version: '0.1.0',
      runtime: 'process',
    });
    expect(await client.healthcheck()).toMatchObject({ service: 'dstack-shim' });

    await client.submitTask(taskConfig('bin-task'));
    const task = await runningTask(client, 'bin-task');
    const runner = new RunnerClient(`http://127.0.0.1:${task.ports[0]!.host}`);
    await runner.submit(submitBody(['echo hello from the shim']));
    await runner.run();
    const job = await pullUntil(runner, isFinished);
    expect(job.output).toBe('hello from the shim\n');
    expect(job.states.at(-1)).toMatchObject({ state: 'done', termination_reason: 'done_by_runner' });

    await client.terminateTask('bin-task', { termination_reason: 'done_by_runner', timeout: 2 });
    expect(await client.getTask('bin-task')).toMatchObject({ status: 'terminated' });
    await client.removeTask('bin-task');
    expect(await client.listTasks()).toEqual([]);

    await client.shutdown();
    expect(await waitForExit(shimProcess!)).toBe(0);
  });

  it('stops running jobs and exits 0 on SIGTERM', async () => {
    const { client } = await startShimProcess();
    await client.submitTask(taskConfig('sleeper'));
    const task = await runningTask(client, 'sleeper');
    const runner = new RunnerClient(`http://127.0.0.1:${task.ports[0]!.host}`);
    await runner.submit(submitBody(['echo pid=$$', 'sleep 60'], 60));
    await runner.run();
    const running = await pullUntil(runner, (collected) => collected.output.includes('pid='));
    const pid = Number(/pid=(\d+)/.exec(running.output)![1]);
    expect(processExists(pid)).toBe(true);

    shimProcess!.kill('SIGTERM');
    expect(await waitForExit(shimProcess!)).toBe(0);
    await eventually(() => (processExists(-pid) ? undefined : true), 'the job’s processes to be gone');
  });

  it('hands tasks only the GPUs of --gpu-ids: with an empty list, they see none', async () => {
    const { client } = await startShimProcess(['--gpu-ids=']);
    await client.submitTask(taskConfig('no-gpus', { gpu: -1 }));
    const task = await runningTask(client, 'no-gpus');
    const runner = new RunnerClient(`http://127.0.0.1:${task.ports[0]!.host}`);
    await runner.submit(submitBody(['echo "cuda=[$CUDA_VISIBLE_DEVICES] nvidia=[$NVIDIA_VISIBLE_DEVICES]"']));
    await runner.run();
    const job = await pullUntil(runner, isFinished);
    expect(job.output).toBe('cuda=[] nvidia=[void]\n');
  });

  it('refuses --gpu-ids that are not GPU indices with exit status 2', async () => {
    const started = spawnNode(SHIM_BIN_PATH, ['--home', homeDir, '--runtime', 'process', '--gpu-ids=0,all']);
    shimProcess = started.child;
    expect(await waitForExit(shimProcess)).toBe(2);
    expect(started.output()).toContain('invalid --gpu-ids: 0,all');
  });

  it('takes its token from DSTACK_SHIM_TOKEN and keeps it from the tasks', async () => {
    const { client, url } = await startShimProcess([], {
      ...process.env,
      DSTACK_SHIM_TOKEN: 'shim-env-token',
    });
    await expect(client.listTasks()).rejects.toMatchObject({ statusCode: 401 });
    const authorized = new ShimClient(url, { token: 'shim-env-token' });
    await authorized.submitTask(taskConfig('env-task'));
    const task = await runningTask(authorized, 'env-task');
    const runner = new RunnerClient(`http://127.0.0.1:${task.ports[0]!.host}`, {
      token: deriveRunnerToken('shim-env-token', 'env-task'),
    });
    await runner.submit(submitBody(['echo "token=[$DSTACK_SHIM_TOKEN]"']));
    await runner.run();
    expect((await pullUntil(runner, isFinished)).output).toBe('token=[]\n');
    expect(output()).not.toContain('warning');
  });

  it('takes its token from --token-file, which only its owner may read', async () => {
    const tokenFile = join(homeDir, 'token');
    writeFileSync(tokenFile, 'shim-file-token\n', { mode: 0o600 });
    const { client, url } = await startShimProcess(['--token-file', tokenFile]);
    await expect(client.listTasks()).rejects.toMatchObject({ statusCode: 401 });
    expect(await new ShimClient(url, { token: 'shim-file-token' }).listTasks()).toEqual([]);
  });

  it('refuses a token file that other users may read, with exit status 2', async () => {
    const tokenFile = join(homeDir, 'token');
    writeFileSync(tokenFile, 'shim-file-token\n', { mode: 0o644 });
    const started = spawnNode(SHIM_BIN_PATH, [
      '--home',
      homeDir,
      '--http-port',
      '0',
      '--token-file',
      tokenFile,
    ]);
    shimProcess = started.child;
    expect(await waitForExit(shimProcess)).toBe(2);
    expect(started.output()).toContain('may be read by other users (mode 0644)');
  });

  it('warns that its API is open when started without a token', async () => {
    const { DSTACK_SHIM_TOKEN: _ignored, ...environment } = process.env;
    const { client } = await startShimProcess([], environment);
    expect(await client.listTasks()).toEqual([]);
    expect(output()).toContain('warning: no --token-file or DSTACK_SHIM_TOKEN');
  });

  it('refuses an unknown runtime with exit status 2', async () => {
    const started = spawnNode(SHIM_BIN_PATH, ['--home', homeDir, '--runtime', 'vm']);
    shimProcess = started.child;
    expect(await waitForExit(shimProcess)).toBe(2);
    expect(started.output()).toContain('invalid --runtime: vm');
  });

  it('with --runtime auto and no Docker daemon, runs jobs as processes and refuses a task naming an image', async () => {
    const { state, client } = await startShimProcess([
      '--runtime',
      'auto',
      '--docker-socket',
      join(homeDir, 'no-docker.sock'),
    ]);
    expect(state.runtime).toBe('process');
    expect(output()).toContain('runtime auto: no Docker');
    await client.submitTask(taskConfig('in-image', { image_name: 'python:3.11' }));
    const refused = await eventually(async () => {
      const task = await client.getTask('in-image');
      return task?.status === 'terminated' ? task : undefined;
    }, 'the task to be refused');
    expect(refused).toMatchObject({ termination_reason: 'executor_error' });
    expect(refused.termination_message).toMatch(
      /^image python:3\.11: this instance runs jobs without containers/,
    );
  });
});
