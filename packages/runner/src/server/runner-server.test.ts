import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentApiError } from '../client/agent-api-error.js';
import { RunnerClient } from '../client/runner-client.js';
import { HOST_JOB_VARIABLES } from '../job/host-job-environment.js';
import { craftTar, file } from '../testing/crafted-tar.test.helpers.js';
import {
  decodeLogs,
  processExists,
  pullUntil,
  submitBody,
  waitFor,
} from '../testing/runner-job.test.helpers.js';
import { type RunnerServer, startRunner } from './runner-server.js';

let homeDir: string;
let runner: RunnerServer | undefined;
let client: RunnerClient;

beforeEach(async () => {
  homeDir = mkdtempSync(join(tmpdir(), 'dstack-runner-test-'));
  runner = await startRunner({ port: 0, homeDir });
  client = new RunnerClient(runner.url);
});

afterEach(async () => {
  await runner?.close();
  runner = undefined;
  rmSync(homeDir, { recursive: true, force: true });
});

async function runJob(...args: Parameters<typeof submitBody>) {
  await client.submit(submitBody(...args));
  return client.run();
}

/** The pid the job printed as `pid=N` (its shell, which leads the job's process group). */
function printedPid(output: string): number {
  const match = /pid=(\d+)/.exec(output);
  if (match === null) {
    throw new Error(`no pid in ${JSON.stringify(output)}`);
  }
  return Number(match[1]);
}

describe('runner API', () => {
  it('answers the healthcheck', async () => {
    expect(await client.healthcheck()).toEqual({ service: 'dstack-runner', version: '0.1.0' });
  });

  it('reports output in order with its source and a failing exit status', async () => {
    const started = await runJob(['echo hello; echo err >&2; printf partial; exit 3']);
    expect(started).toEqual({ working_dir: join(homeDir, 'workflow'), username: expect.any(String) });
    const job = await pullUntil(client);
    expect(job.jobLogs.map((log) => [log.source, Buffer.from(log.message, 'base64').toString()])).toEqual([
      ['stdout', 'hello\n'],
      ['stderr', 'err\n'],
      ['stdout', 'partial'],
    ]);
    expect(job.states.map((state) => state.state)).toEqual(['running', 'failed']);
    expect(job.states.at(-1)).toMatchObject({
      termination_reason: 'container_exited_with_error',
      termination_message: 'exit status 3',
      exit_status: 3,
    });
    const timestamps = [...job.states, ...job.jobLogs, ...job.runnerLogs].map((entry) => entry.timestamp);
    expect(new Set(timestamps).size).toBe(timestamps.length);
  });

  it('reports done when every command succeeds', async () => {
    await runJob(['echo one', 'echo two']);
    const job = await pullUntil(client);
    expect(decodeLogs(job.jobLogs)).toBe('one\ntwo\n');
    expect(job.states.at(-1)).toMatchObject({
      state: 'done',
      termination_reason: 'done_by_runner',
      exit_status: 0,
    });
  });

  it("executes the job spec's commands as an argv, as dstack's runner does, and fails a spec without any", async () => {
    await client.submit(submitBody([], { commands: ['printf', '[%s]', 'a b', 'c'] }));
    await client.run();
    const job = await pullUntil(client);
    expect(decodeLogs(job.jobLogs)).toBe('[a b][c]');
    expect(job.states.at(-1)).toMatchObject({ state: 'done', exit_status: 0 });

    await runner?.close();
    runner = await startRunner({ port: 0, homeDir });
    client = new RunnerClient(runner.url);
    await client.submit(submitBody([], { commands: [] }));
    await client.run();
    const empty = await pullUntil(client);
    expect(empty.states.at(-1)).toMatchObject({
      state: 'failed',
      termination_reason: 'executor_error',
      termination_message: expect.stringContaining('set `commands` or `entrypoint`'),
    });
  });

  it('stops at the first failing command', async () => {
    await runJob(['echo one', 'false', 'echo never']);
    const job = await pullUntil(client);
    expect(decodeLogs(job.jobLogs)).toBe('one\n');
    expect(job.states.at(-1)).toMatchObject({ state: 'failed', exit_status: 1 });
  });

  it('gives the job the DSTACK_* variables, then secrets, then its own env', async () => {
    const dump = `"${process.execPath}" -e 'console.log(JSON.stringify(process.env))'`;
    await runJob(
      [dump],
      { job_num: 1, jobs_per_replica: 2, env: { SHARED: 'from-job', ONLY_JOB: 'job' } },
      {
        cluster_info: { job_ips: ['10.0.0.1', '10.0.0.2'], master_job_ip: '10.0.0.1', gpus_per_job: 2 },
        secrets: { SHARED: 'from-secret', ONLY_SECRET: 'secret' },
        run: {
          id: 'run-id-1',
          run_name: 'test-run',
          project_name: 'main',
          user: 'admin',
          run_spec: { repo_id: 'repo-1' },
        },
      },
    );
    const job = await pullUntil(client);
    expect(job.states.at(-1)?.state).toBe('done');
    const env = JSON.parse(decodeLogs(job.jobLogs)) as Record<string, string>;
    const repoDir = join(homeDir, 'workflow');
    expect(env).toMatchObject({
      DSTACK_RUN_NAME: 'test-run',
      DSTACK_RUN_ID: 'run-id-1',
      DSTACK_JOB_ID: 'job-submission-1',
      DSTACK_REPO_ID: 'repo-1',
      DSTACK_REPO_DIR: repoDir,
      DSTACK_WORKING_DIR: repoDir,
      DSTACK_GPUS_NUM: '4',
      DSTACK_GPUS_PER_NODE: '2',
      DSTACK_NODES_NUM: '2',
      DSTACK_NODE_RANK: '1',
      DSTACK_MASTER_NODE_IP: '10.0.0.1',
      DSTACK_NODES_IPS: '10.0.0.1\n10.0.0.2',
      SHARED: 'from-job',
      ONLY_JOB: 'job',
      ONLY_SECRET: 'secret',
      PATH: process.env.PATH,
    });
    expect(readFileSync(env.DSTACK_MPI_HOSTFILE!, 'utf8')).toBe('10.0.0.1 slots=2\n10.0.0.2 slots=2\n');
  });

  it("gives the job only the basics of the runner's own environment when given none", async () => {
    // A runner living inside another process (the shim's process runtime) must not pass on its secrets.
    process.env.RUNNER_HOST_CANARY = 'host-secret-canary';
    try {
      await runner?.close();
      runner = await startRunner({ port: 0, homeDir });
      client = new RunnerClient(runner.url);
      await runJob([`"${process.execPath}" -e 'console.log(JSON.stringify(process.env))'`], {
        env: { FROM_JOB: 'job' },
      });
      const job = await pullUntil(client);
      const env = JSON.parse(decodeLogs(job.jobLogs)) as Record<string, string>;
      const shellVariables = ['PWD', 'SHLVL', '_'];
      expect(
        Object.keys(env).filter(
          (name) =>
            !name.startsWith('DSTACK_') &&
            !(HOST_JOB_VARIABLES as readonly string[]).includes(name) &&
            !shellVariables.includes(name),
        ),
      ).toEqual(['FROM_JOB']);
      expect(env).toMatchObject({ PATH: process.env.PATH, HOME: process.env.HOME });
    } finally {
      delete process.env.RUNNER_HOST_CANARY;
    }
  });

  it('kills a job that ignores SIGTERM once stop_duration has passed', async () => {
    await runJob(["trap '' TERM; echo pid=$$; sleep 60"], { stop_duration: 1 });
    const running = await pullUntil(client, (job) => decodeLogs(job.jobLogs).includes('pid='));
    const pid = printedPid(decodeLogs(running.jobLogs));
    await client.stop();
    const job = await pullUntil(client, undefined, running, running.states.at(-1)!.timestamp);
    expect(job.states.at(-1)).toMatchObject({
      state: 'terminated',
      termination_reason: 'terminated_by_user',
      exit_status: null,
    });
    expect(decodeLogs(job.runnerLogs)).toContain('job exited with signal SIGKILL');
    // Orphans of the killed shell are reaped by init, not by the runner: give it a moment.
    await waitFor(() => !processExists(-pid), 10_000, 'the job process group to exit');
  });

  it('stops a job that honours SIGTERM without waiting for the kill', async () => {
    // A minute of grace: the test times out long before if only SIGKILL ends the job.
    await runJob(['echo pid=$$', 'sleep 60'], { stop_duration: 60 });
    const running = await pullUntil(client, (job) => decodeLogs(job.jobLogs).includes('pid='));
    const pid = printedPid(decodeLogs(running.jobLogs));
    await client.stop();
    const job = await pullUntil(client, undefined, running, running.states.at(-1)!.timestamp);
    expect(job.states.at(-1)).toMatchObject({
      state: 'terminated',
      termination_reason: 'terminated_by_user',
    });
    expect(decodeLogs(job.runnerLogs)).toContain('signal SIGTERM');
    // Orphans of the killed shell are reaped by init, not by the runner: give it a moment.
    await waitFor(() => !processExists(-pid), 10_000, 'the job process group to exit');
  });

  it('kills the job sooner when a later stop gives a shorter grace (a shim terminate after the server’s stop)', async () => {
    // A minute of grace from the first stop: the test times out long before if the second is ignored.
    await runJob(["trap '' TERM; echo pid=$$; sleep 60"], { stop_duration: 60 });
    const running = await pullUntil(client, (job) => decodeLogs(job.jobLogs).includes('pid='));
    const pid = printedPid(decodeLogs(running.jobLogs));
    await client.stop();
    await pullUntil(client, (job) => decodeLogs(job.runnerLogs).includes('stopping the job'), running);
    await runner!.stopJob(1);
    const job = await pullUntil(client, undefined, running, running.states.at(-1)!.timestamp);
    expect(job.states.at(-1)).toMatchObject({
      state: 'terminated',
      termination_reason: 'terminated_by_user',
    });
    expect(decodeLogs(job.runnerLogs)).toContain('job exited with signal SIGKILL');
    await waitFor(() => !processExists(-pid), 10_000, 'the job process group to exit');
  });

  it('pages more than 1000 lines without losing or repeating one', async () => {
    await runJob(['seq 1 2500']);
    const job = await pullUntil(client);
    expect(job.cutAnswers).toBeGreaterThanOrEqual(2);
    const expected = Array.from({ length: 2500 }, (_, index) => `${index + 1}\n`).join('');
    expect(decodeLogs(job.jobLogs)).toBe(expected);
    expect(job.states.map((state) => state.state)).toEqual(['running', 'done']);
  });

  it('never answers more than 1000 log entries at once', async () => {
    await runJob(['seq 1 1500']);
    await pullUntil(client);
    const first = await client.pull(0);
    expect(first.job_logs.length + first.runner_logs.length).toBe(1000);
    expect(first.has_more).toBe(true);
  });

  it('rejects a bad submit body with a 400 that names the field', async () => {
    const body = submitBody(['true']);
    const error = await client
      .submit({ ...body, job_spec: { ...body.job_spec, commands: 'echo hi' as unknown as string[] } })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AgentApiError);
    expect((error as AgentApiError).statusCode).toBe(400);
    expect((error as AgentApiError).body).toContain('job_spec.commands');
  });

  it('refuses to run before a submit, and a second submit', async () => {
    await expect(client.run()).rejects.toMatchObject({ statusCode: 409 });
    await client.submit(submitBody(['true']));
    await expect(client.submit(submitBody(['true']))).rejects.toMatchObject({ statusCode: 409 });
  });

  it('extracts uploaded code into the repo directory and runs in the working dir', async () => {
    const source = mkdtempSync(join(tmpdir(), 'dstack-runner-code-'));
    try {
      mkdirSync(join(source, 'src'));
      writeFileSync(join(source, 'src', 'hello.txt'), 'hello from the repo\n');
      writeFileSync(join(source, 'top.txt'), 'top\n');
      const archive = execFileSync('tar', ['-cf', '-', '-C', source, '.']);
      await client.submit(submitBody(['pwd', 'cat hello.txt', 'cat ../top.txt'], { working_dir: 'src' }));
      await client.uploadCode(new Uint8Array(archive));
      const started = await client.run();
      expect(started.working_dir).toBe(join(homeDir, 'workflow', 'src'));
      const job = await pullUntil(client);
      expect(decodeLogs(job.jobLogs)).toBe(`${started.working_dir}\nhello from the repo\ntop\n`);
    } finally {
      rmSync(source, { recursive: true, force: true });
    }
  });

  it('accepts an empty code upload', async () => {
    await client.submit(submitBody(['ls -A']));
    await client.uploadCode(new Uint8Array());
    await client.run();
    const job = await pullUntil(client);
    expect(job.states.at(-1)?.state).toBe('done');
    expect(decodeLogs(job.jobLogs)).toBe('');
    // Nothing to extract: no archive was written on the way.
    expect(existsSync(join(homeDir, '.uploads'))).toBe(false);
  });

  it('refuses a corrupt code archive with a 400 saying why', async () => {
    await client.submit(submitBody(['true']));
    await expect(client.uploadCode(new TextEncoder().encode('not a tar archive'))).rejects.toMatchObject({
      statusCode: 400,
      body: expect.stringContaining('upload_code: the tar archive ends early, at byte 0'),
    });
  });

  it('refuses a code archive entry that climbs out with a 400 naming it, and writes nothing outside', async () => {
    await client.submit(submitBody(['true']));
    const archive = craftTar([file('inside.txt', 'in\n'), file('../../escaped.txt', 'out\n')]);
    await expect(client.uploadCode(archive)).rejects.toMatchObject({
      statusCode: 400,
      body: expect.stringContaining(
        'tar archive entry \\"../../escaped.txt\\" refused: the path climbs out with ..',
      ),
    });
    expect(existsSync(join(homeDir, 'escaped.txt'))).toBe(false);
    expect(existsSync(join(homeDir, '..', 'escaped.txt'))).toBe(false);
  });

  it('fails with executor_error when the job cannot start', async () => {
    const file = join(homeDir, 'a-file');
    writeFileSync(file, '');
    await runJob(['true'], { working_dir: join(file, 'below') });
    const job = await pullUntil(client);
    expect(job.states.at(-1)).toMatchObject({ state: 'failed', termination_reason: 'executor_error' });
    expect(job.states.at(-1)?.termination_message).toMatch(/ENOTDIR|EEXIST/);
  });

  it('kills the job when the runner closes', async () => {
    await runJob(["trap '' TERM; echo pid=$$; sleep 60"], { stop_duration: 60 });
    const running = await pullUntil(client, (job) => decodeLogs(job.jobLogs).includes('pid='));
    const pid = printedPid(decodeLogs(running.jobLogs));
    await runner!.close();
    runner = undefined;
    await waitFor(() => !processExists(-pid), 10_000, 'the job process group to exit');
  });
});
