import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Run } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { makeFleet, makeLogEvent, makeOffer, makeRun } from '../__fixtures__/api-objects.js';
import { CLI_TEST_TIMEOUT_MS } from '../__fixtures__/cli-harness.js';
import { StreamAnswer } from '../__fixtures__/fake-dstack-server.js';
import { fakeServerCli } from '../__fixtures__/fake-server-cli.js';

const cli = fakeServerCli();

const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();

function sampleRuns(): Run[] {
  return [
    makeRun({
      name: 'train',
      status: 'running',
      submittedAt: minutesAgo(2),
      provisioned: { backend: 'aws', region: 'us-east-1', price: 1.5, gpus: 2 },
    }),
    makeRun({ name: 'waiting', status: 'submitted', submittedAt: minutesAgo(3 * 60) }),
    makeRun({
      name: 'crashed',
      status: 'failed',
      exitStatus: 3,
      submittedAt: minutesAgo(30),
      error: 'container exited with 3',
    }),
    makeRun({
      name: 'no-gpus',
      status: 'failed',
      submittedAt: minutesAgo(40),
      terminationReason: 'failed_to_start_due_to_no_capacity',
      error: 'every offer failed: aws/us-east-1/g5.xlarge: No capacity',
    }),
    makeRun({
      name: 'denied',
      status: 'failed',
      submittedAt: minutesAgo(50),
      terminationReason: 'executor_error',
      error: 'backend aws: authentication failed: AuthFailure: AWS was not able to validate the credentials',
    }),
    makeRun({
      name: 'halted',
      status: 'terminated',
      submittedAt: minutesAgo(60),
      terminationReason: 'terminated_by_user',
    }),
  ];
}

describe('dstack ps', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('prints active runs as a table', async () => {
    const fake = await cli.startServer({ 'runs/list': () => sampleRuns().slice(0, 2) });
    const result = await cli.harness.run(['ps']);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout.split('\n')).toEqual([
      expect.stringMatching(/^NAME\s+BACKEND\s+GPU\s+PRICE\s+STATUS\s+SUBMITTED$/),
      expect.stringMatching(/^train\s+aws \(us-east-1\)\s+A100:80GB:2\s+\$1\.5\s+running\s+2 mins ago$/),
      expect.stringMatching(/^waiting\s+-\s+-\s+-\s+submitted\s+3 hours ago$/),
      '',
    ]);
    expect(fake.requestsTo('runs/list')[0]?.body).toEqual({
      project_name: 'main',
      only_active: true,
      limit: 100,
    });
  });

  it('lists all runs with -a and adds details with -v', async () => {
    const service = {
      ...makeRun({ name: 'chat', status: 'running', submittedAt: minutesAgo(5) }),
      service: { url: '/proxy/services/main/chat/', model: null, options: {} },
    } as Run;
    const fake = await cli.startServer({ 'runs/list': () => [...sampleRuns(), service] });
    const result = await cli.harness.run(['ps', '-a', '-v']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^NAME\s+BACKEND\s+GPU\s+PRICE\s+STATUS\s+SUBMITTED\s+RESOURCES\s+INSTANCE TYPE\s+PRIORITY\s+URL\s+ERROR$/m,
    );
    expect(result.stdout).toMatch(
      /^train\s.*4xCPU, 16GB, 2xA100 \(80GB\), 100GB \(disk\)\s+local\s+0\s+-\s+-$/m,
    );
    expect(result.stdout).toMatch(
      /^crashed\s.*exited \(3\)\s+30 mins ago\s+-\s+-\s+0\s+-\s+container exited with 3$/m,
    );
    // A service's URL is the server's proxy path made absolute against the project's server.
    expect(result.stdout).toContain(`${fake.url}/proxy/services/main/chat/`);
    expect(result.stdout).toMatch(/^chat\s.*running\s.*\/proxy\/services\/main\/chat\/\s+-$/m);
    expect(fake.requestsTo('runs/list')[0]?.body).toMatchObject({ only_active: false });
  });

  it('says why a finished run ended in STATUS, and the whole message under ERROR with -v', async () => {
    await cli.startServer({ 'runs/list': () => sampleRuns() });
    const table = await cli.harness.run(['ps', '-a']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^crashed\s+-\s+-\s+-\s+exited \(3\)\s+30 mins ago$/m);
    expect(table.stdout).toMatch(/^no-gpus\s+-\s+-\s+-\s+no offers\s+40 mins ago$/m);
    expect(table.stdout).toMatch(/^denied\s+-\s+-\s+-\s+error\s+50 mins ago$/m);
    expect(table.stdout).toMatch(/^halted\s+-\s+-\s+-\s+stopped\s+1 hour ago$/m);
    const verbose = await cli.harness.run(['ps', '-a', '-v']);
    expect(verbose.stdout).toMatch(
      /^denied\s.*error\s+50 mins ago\s+-\s+-\s+0\s+-\s+backend aws: authentication failed: AuthFailure: AWS was not able to validate the credentials$/m,
    );
    expect(verbose.stdout).toMatch(
      /^no-gpus\s.*no offers\s.*every offer failed: aws\/us-east-1\/g5\.xlarge: No capacity$/m,
    );
  });

  it("shows the server's status_message when it sends one", async () => {
    const retrying = {
      ...makeRun({ name: 'waiting', status: 'pending' }),
      status_message: 'retrying',
    } as Run;
    await cli.startServer({ 'runs/list': () => [retrying] });
    const result = await cli.harness.run(['ps']);
    expect(result.stdout).toMatch(/^waiting\s+-\s+-\s+-\s+retrying\s/m);
  });

  it('prints the Run array with --format json', async () => {
    const runs = sampleRuns();
    await cli.startServer({ 'runs/list': () => runs });
    const result = await cli.harness.run(['ps', '--format', 'json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(runs);
  });

  it('uses --project to pick another configured project', async () => {
    const fake = await cli.startServer({ 'runs/list': () => [] });
    writeFileSync(
      cli.harness.configPath,
      `projects:\n  - {name: main, url: 'http://127.0.0.1:9', token: x, default: true}\n  - {name: other, url: '${fake.url}', token: ${fake.token}, default: false}\n`,
    );
    const result = await cli.harness.run(['ps', '--project', 'other']);
    expect(result.code).toBe(0);
    expect(fake.requestsTo('runs/list')[0]?.body).toMatchObject({ project_name: 'other' });
    const fromEnvironment = await cli.harness.run(['ps'], { DSTACK_PROJECT: 'other' });
    expect(fromEnvironment.code).toBe(0);
  });
});

describe('dstack stop', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('stops, or aborts with -x', async () => {
    const fake = await cli.startServer({ 'runs/stop': () => null });
    const stopped = await cli.harness.run(['stop', 'train', '-y']);
    expect(stopped).toMatchObject({ code: 0, stdout: 'Stopped train\n', stderr: '' });
    const aborted = await cli.harness.run(['stop', 'train', '-x', '-y']);
    expect(aborted).toMatchObject({ code: 0, stdout: 'Aborted train\n' });
    expect(fake.requestsTo('runs/stop').map((request) => request.body)).toEqual([
      { runs_names: ['train'], abort: false },
      { runs_names: ['train'], abort: true },
    ]);
    expect(fake.requestsTo('runs/stop')[0]?.path).toBe('/api/project/main/runs/stop');
  });
});

describe('dstack logs', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('prints every page of logs to the matching stream', async () => {
    const logs = Array.from({ length: 1500 }, (_, index) =>
      makeLogEvent(index % 100 === 0 ? 'stderr' : 'stdout', `line ${index}\n`, index),
    );
    await cli.startServer({
      'runs/get': () => makeRun({ name: 'train', status: 'done' }),
      'logs/poll': (body: { start_time?: string; limit: number }) => ({
        logs: logs
          .filter((event) => !body.start_time || event.timestamp > body.start_time)
          .slice(0, body.limit),
        next_token: null,
      }),
    });
    const result = await cli.harness.run(['logs', 'train']);
    expect(result.code).toBe(0);
    const expected = (source: string) =>
      logs
        .filter((event) => event.log_source === source)
        .map((event) => Buffer.from(event.message, 'base64').toString())
        .join('');
    expect(result.stdout).toBe(expected('stdout'));
    expect(result.stderr).toBe(expected('stderr'));
  });
});

describe('dstack logs -f', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  const logs = Array.from({ length: 6 }, (_, index) =>
    makeLogEvent(index === 3 ? 'stderr' : 'stdout', `line ${index}\n`, index),
  );
  const decoded = (source: string) =>
    logs
      .filter((event) => event.log_source === source)
      .map((event) => Buffer.from(event.message, 'base64').toString())
      .join('');

  it('follows logs/stream until the run ends', async () => {
    await cli.startServer({
      'runs/get': () => makeRun({ name: 'train', status: 'running' }),
      'logs/stream': () =>
        new StreamAnswer(
          (async function* () {
            yield { heartbeat: true, next_token: null };
            for (const [index, event] of logs.entries()) {
              yield { ...event, next_token: String(index + 1) };
              await sleep(10);
            }
            yield { end: 'run_finished', status: 'done', next_token: String(logs.length) };
          })(),
        ),
    });
    const result = await cli.harness.run(['logs', 'train', '-f']);
    expect(result).toMatchObject({ code: 0, stdout: decoded('stdout'), stderr: decoded('stderr') });
    expect(cli.server?.requestsTo('logs/stream').map((request) => request.body)).toEqual([
      { run_name: 'train' },
    ]);
    expect(cli.server?.requestsTo('logs/poll')).toEqual([]);
  });

  it('polls logs/poll on a server without logs/stream, with the same output', async () => {
    let gets = 0;
    await cli.startServer({
      'runs/get': () => {
        gets += 1;
        return makeRun({ name: 'train', status: gets < 4 ? 'running' : 'done' });
      },
      'logs/poll': (body: { start_time?: string; limit: number }) => ({
        logs: logs
          .slice(0, gets * 2)
          .filter((event) => !body.start_time || event.timestamp > body.start_time)
          .slice(0, body.limit),
        next_token: null,
      }),
    });
    const result = await cli.harness.run(['logs', 'train', '-f']);
    expect(result).toMatchObject({ code: 0, stdout: decoded('stdout'), stderr: decoded('stderr') });
    expect(cli.server?.requestsTo('logs/stream')).toHaveLength(1);
    expect(cli.server?.requestsTo('logs/poll').length).toBeGreaterThan(1);
  });
});

describe('dstack offer', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('sends the requirements in the configuration grammar and prints the offers', async () => {
    const fake = await cli.startServer({
      'offers/list': () => ({
        offers: [makeOffer({ backend: 'aws', region: 'us-east-1', name: 'p4d', gpus: 2, price: 32.77 })],
        total_offers: 7,
      }),
    });
    const result = await cli.harness.run([
      'offer',
      '--gpu',
      'A100:80GB:2',
      '--spot',
      '-b',
      'aws',
      '-b',
      'gcp',
      '-r',
      'us-east-1',
      '--max-price',
      '40',
      '--max-offers',
      '5',
    ]);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const body = fake.requestsTo('offers/list')[0]?.body as {
      configuration: Record<string, unknown>;
      max_offers: number;
    };
    expect(body.max_offers).toBe(5);
    expect(body.configuration).toMatchObject({
      type: 'task',
      spot_policy: 'spot',
      max_price: 40,
      backends: ['aws', 'gcp'],
      regions: ['us-east-1'],
      resources: {
        gpu: { vendor: 'nvidia', name: ['A100'], memory: { min: 80, max: 80 }, count: { min: 2, max: 2 } },
        cpu: { count: { min: 2, max: null } },
      },
    });
    expect(result.stdout).toMatch(
      /^1\s+aws\s+us-east-1\s+4xCPU, 16GB, 2xA100 \(80GB\), 100GB \(disk\)\s+p4d\s+\$32\.77\s+available$/m,
    );
    expect(result.stdout).toContain('and 6 more');
  });

  it('prints JSON with --format json', async () => {
    const answer = { offers: [makeOffer()], total_offers: 1 };
    await cli.startServer({ 'offers/list': () => answer });
    const result = await cli.harness.run(['offer', '--format', 'json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ ...answer, warnings: [] });
  });

  it('warns on stderr about backends whose offers are missing, and still prints the others', async () => {
    const warning = 'Offers of backend vastai are missing: the backend did not answer within 10 s';
    await cli.startServer({
      'offers/list': () => ({
        offers: [makeOffer({ backend: 'aws', region: 'us-east-1', name: 'p4d', gpus: 2, price: 32.77 })],
        total_offers: 1,
        warnings: [warning],
      }),
    });
    const result = await cli.harness.run(['offer', '-b', 'aws', '-b', 'vastai']);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(`Warning: ${warning}\n`);
    expect(result.stdout).toMatch(/^1\s+aws\s+us-east-1/m);
  });

  it('rejects a bad --gpu without asking the server', async () => {
    const fake = await cli.startServer({});
    const result = await cli.harness.run(['offer', '--gpu', 'A100:lots']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: --gpu: invalid GPU spec 'A100:lots'/);
    expect(fake.requests).toEqual([]);
  });
});

describe('dstack fleet', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('lists fleets one line per instance', async () => {
    const gpus = makeFleet('gpus', 2);
    // The second instance is split into 4 blocks, 3 of them taken.
    Object.assign(gpus.instances[1] ?? {}, { status: 'busy', total_blocks: 4, busy_blocks: 3 });
    await cli.startServer({ 'fleets/list': () => [gpus, makeFleet('empty', 0)] });
    const result = await cli.harness.run(['fleet', 'list']);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[1]).toMatch(/^gpus\s+2\s+4xCPU, 16GB, 100GB \(disk\)\s+local \(local\)\s+\$0\.5\s+idle\s+/);
    expect(lines[2]).toMatch(/^\s+4xCPU, 16GB, 100GB \(disk\)\s+local \(local\)\s+\$0\.5\s+3\/4 busy\s+/);
    expect(lines[3]).toMatch(/^empty\s+0\s+-\s+-\s+-\s+active\s+/);
  });

  it('deletes a fleet', async () => {
    const fake = await cli.startServer({ 'fleets/delete': () => null });
    const result = await cli.harness.run(['fleet', 'delete', 'gpus', '-y']);
    expect(result.code).toBe(0);
    expect(fake.requestsTo('fleets/delete')[0]?.body).toEqual({ names: ['gpus'] });
  });
});

describe('dstack delete', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('stops an active run, waits for it and deletes it', async () => {
    let stopped = false;
    const fake = await cli.startServer({
      'runs/get': () => makeRun({ name: 'train', status: stopped ? 'terminated' : 'running' }),
      'runs/stop': () => {
        stopped = true;
        return null;
      },
      'runs/delete': () => null,
    });
    const file = join(cli.harness.home, 'train.dstack.yml');
    writeFileSync(file, 'type: task\nname: train\ncommands: [echo hi]\n');
    const result = await cli.harness.run(['delete', '-f', file, '-y']);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toContain('Deleted run train');
    expect(fake.requestsTo('runs/delete')[0]?.body).toEqual({ runs_names: ['train'] });
    const order = fake.requests.map((request) => request.path.split('/').at(-1));
    expect(order.indexOf('stop')).toBeLessThan(order.indexOf('delete'));
  });
});
