import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DEFAULT_JOB_IMAGE,
  defaultJobImage,
  type RunnerJobState,
  shellCommandLine,
  TaskConfigSchema,
} from '@dstack/core/agent-protocol';
import { HOST_JOB_VARIABLES, RunnerClient } from '@dstack/runner';
import { afterEach, describe, expect, it } from 'vitest';
import type { StartedTask, TaskDevices } from '../task-runtime.js';
import { createProcessRuntime } from './process-runtime.js';

const runsAsRoot = process.getuid?.() === 0;

describe('process runtime', () => {
  const started: StartedTask[] = [];
  const directories: string[] = [];

  afterEach(async () => {
    for (const task of started.splice(0)) await task.remove();
    for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
  });

  async function runAs(
    containerUser: string,
    commands: string[],
    devices?: TaskDevices,
    imageName: string = DEFAULT_JOB_IMAGE,
  ) {
    const homeDir = await mkdtemp(join(tmpdir(), 'dstack-process-runtime-'));
    directories.push(homeDir);
    const task = TaskConfigSchema.parse({
      id: randomUUID(),
      name: 'process-test',
      image_name: imageName,
      container_user: containerUser,
    });
    const runtimeTask = await createProcessRuntime().start(
      task,
      homeDir,
      { onStatus: () => undefined },
      devices,
    );
    started.push(runtimeTask);
    const runner = new RunnerClient(`http://127.0.0.1:${runtimeTask.runnerPort}`);
    await runner.submit({
      run: { id: 'r', run_name: 'r', project_name: 'p', user: 'u' },
      job_spec: { job_name: 'r-0-0', job_num: 0, commands: shellCommandLine(commands), env: {} },
      job_submission: { id: 's' },
    });
    await runner.run();
    const states: RunnerJobState[] = [];
    let output = '';
    let timestamp = 0;
    for (;;) {
      const pulled = await runner.pull(timestamp);
      states.push(...pulled.job_states);
      for (const log of pulled.job_logs) output += Buffer.from(log.message, 'base64').toString('utf8');
      timestamp = pulled.last_updated;
      if (
        !pulled.has_more &&
        states.some((state) => ['done', 'failed', 'terminated'].includes(state.state))
      ) {
        return { states, output };
      }
      if (!pulled.has_more) await sleep(50);
    }
  }

  it("runs the job as the shim's own user when the task names none", async () => {
    const result = await runAs('', ['id -u']);
    expect(result.output).toBe(`${process.getuid?.()}\n`);
  });

  it.skipIf(!runsAsRoot)('runs the job as container_user when the shim is root', async () => {
    const result = await runAs('65534', ['id -u']);
    expect(result.states.at(-1)?.state).toBe('done');
    expect(result.output).toBe('65534\n');
  });

  it('fails the job naming user when container_user is unknown on the host', async () => {
    const result = await runAs('dstack-no-such-user', ['echo should-not-run']);
    expect(result.output).toBe('');
    expect(result.states.at(-1)?.termination_message).toBe(
      'user "dstack-no-such-user": no user named "dstack-no-such-user" in /etc/passwd',
    );
  });

  it('shows the job only the GPUs the task holds', async () => {
    const result = await runAs('', ['echo "$CUDA_VISIBLE_DEVICES/$NVIDIA_VISIBLE_DEVICES"'], {
      gpuIds: ['1', '3'],
    });
    expect(result.output).toBe('1,3/1,3\n');
  });

  it("gives the job the shim's PATH and HOME but none of its other variables", async () => {
    // The shim's environment is what started it: the server's on the local backend.
    process.env.PROCESS_RUNTIME_CANARY = 'shim-secret-canary';
    try {
      const dump = `"${process.execPath}" -e 'console.log(JSON.stringify(process.env))'`;
      const result = await runAs('', [dump]);
      const jobEnvironment = JSON.parse(result.output) as Record<string, string>;
      expect(jobEnvironment).toMatchObject({ PATH: process.env.PATH, HOME: process.env.HOME });
      const shellVariables = ['PWD', 'SHLVL', '_'];
      const foreign = Object.keys(jobEnvironment).filter(
        (name) =>
          !name.startsWith('DSTACK_') &&
          !(HOST_JOB_VARIABLES as readonly string[]).includes(name) &&
          !shellVariables.includes(name),
      );
      expect(foreign).toEqual([]);
      expect(result.output).not.toContain('shim-secret-canary');
    } finally {
      delete process.env.PROCESS_RUNTIME_CANARY;
    }
  });

  it("runs a task in any default image (the devel variant, a mirror's repository) on the host", async () => {
    const image = defaultJobImage({ nvcc: true, baseImage: '127.0.0.1:5000/dstackai/base' });
    const result = await runAs('', ['echo on-the-host'], undefined, image);
    expect(result.states.at(-1)?.state).toBe('done');
    expect(result.output).toContain('on-the-host');
  });

  it('refuses a task naming an image other than the default, naming the image', async () => {
    const homeDir = await mkdtemp(join(tmpdir(), 'dstack-process-runtime-'));
    directories.push(homeDir);
    const task = TaskConfigSchema.parse({ id: randomUUID(), name: 'with-image', image_name: 'python:3.11' });
    const start = createProcessRuntime().start(task, homeDir, { onStatus: () => undefined });
    await expect(start).rejects.toMatchObject({
      reason: 'executor_error',
      message: expect.stringMatching(/^image python:3\.11: this instance runs jobs without containers/),
    });
  });
});
