import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LogEvent, RunSpec, RunStatus } from '@dstack/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeFleet, makeLogEvent, makeOffer, makeRun, makeRunPlan } from '../__fixtures__/api-objects.js';
import { CLI_TEST_TIMEOUT_MS, CliHarness, waitFor } from '../__fixtures__/cli-harness.js';
import {
  FakeDstackServer,
  type FakeHandler,
  HttpAnswer,
  StreamAnswer,
} from '../__fixtures__/fake-dstack-server.js';

let harness: CliHarness;
let server: FakeDstackServer | undefined;

beforeEach(() => {
  harness = new CliHarness();
});

afterEach(async () => {
  harness.cleanUp();
  const problems = server?.problems ?? [];
  await server?.close();
  server = undefined;
  expect(problems).toEqual([]);
});

interface ScriptedRun {
  name: string;
  /** Statuses returned by successive `runs/get` calls; the last one repeats. */
  statuses: RunStatus[];
  logs: LogEvent[];
  exitStatus?: number;
}

/**
 * Handlers for a run that moves through `statuses`, one per `runs/get`. Logs appear two per
 * `runs/get` once running, and all of them once finished; `logs/poll` treats `start_time` as
 * exclusive and pages by `limit`, as the server does. With `stream`, `logs/stream` pushes each
 * log as soon as it is visible and ends once the run is finished; without it, the server is an
 * older one without that endpoint.
 */
function scriptedRunHandlers(
  script: ScriptedRun,
  options: { stream?: boolean } = {},
): Record<string, FakeHandler> {
  let step = -1;
  let firstRunningStep: number | undefined;
  const status = () => script.statuses[Math.min(Math.max(step, 0), script.statuses.length - 1)]!;
  const finished = () => ['done', 'failed', 'terminated'].includes(status());
  const visibleLogs = () => {
    if (finished()) return script.logs;
    if (firstRunningStep === undefined) return [];
    return script.logs.slice(0, (step - firstRunningStep + 1) * 2);
  };
  async function* streamLines(nextToken: string | undefined, signal: AbortSignal) {
    let sent = Number(nextToken ?? 0);
    yield { heartbeat: true, next_token: nextToken ?? null };
    while (!signal.aborted) {
      const done = finished();
      const logs = visibleLogs();
      for (; sent < logs.length; sent += 1) yield { ...logs[sent], next_token: String(sent + 1) };
      if (done) {
        yield { end: 'run_finished', status: status(), next_token: String(sent) };
        return;
      }
      await sleep(5);
    }
  }
  const streamHandlers: Record<string, FakeHandler> = options.stream
    ? {
        'logs/stream': (body: { next_token?: string }, _request, signal) =>
          new StreamAnswer(streamLines(body.next_token, signal)),
      }
    : {};
  return {
    ...streamHandlers,
    'runs/get_plan': (body: { run_spec: RunSpec }) =>
      makeRunPlan({ ...body.run_spec, run_name: body.run_spec.run_name ?? script.name }, [
        makeOffer({ price: 0 }),
        makeOffer({ name: 'big', cpus: 16, price: 0.25 }),
        makeOffer({ name: 'bigger', cpus: 32, price: 0.5 }),
        makeOffer({ name: 'biggest', cpus: 64, price: 1 }),
      ]),
    'runs/apply': () => makeRun({ name: script.name, status: 'submitted' }),
    'runs/get': () => {
      step += 1;
      if (status() === 'running' && firstRunningStep === undefined) firstRunningStep = step;
      return makeRun({
        name: script.name,
        status: status(),
        ...(script.exitStatus === undefined ? {} : { exitStatus: script.exitStatus }),
      });
    },
    'logs/poll': (body: { start_time?: string; limit: number }) => {
      const after = body.start_time ? Date.parse(body.start_time) : -Infinity;
      const logs = visibleLogs()
        .filter((event) => Date.parse(event.timestamp) > after)
        .slice(0, body.limit);
      return { logs, next_token: null };
    },
  };
}

function writeTask(name: string, extra = ''): string {
  const file = join(harness.home, `${name}.dstack.yml`);
  writeFileSync(file, `type: task\nname: ${name}\ncommands:\n  - echo hi\n${extra}`);
  return file;
}

/** Five stdout lines and five stderr lines, interleaved, 1 ms apart. */
function interleavedLogs(): LogEvent[] {
  const logs: LogEvent[] = [];
  for (let index = 1; index <= 5; index += 1) {
    logs.push(makeLogEvent('stdout', `out ${index}\n`, index * 10));
    logs.push(makeLogEvent('stderr', `err ${index}\n`, index * 10 + 1));
  }
  return logs;
}

describe('dstack apply (built bin, fake server)', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('prints the plan, streams logs in order to stdout and stderr, and exits 0 when done', async () => {
    server = await FakeDstackServer.start({
      handlers: scriptedRunHandlers({
        name: 'hello',
        statuses: ['submitted', 'provisioning', 'running', 'running', 'running', 'running', 'done'],
        logs: interleavedLogs(),
      }),
    });
    await harness.useProject(server.url, server.token);
    const file = writeTask('hello', 'resources:\n  gpu: A100:80GB:2\nmax_price: 2\n');
    const result = await harness.run(['apply', '-f', file, '-y']);
    expect(result.stderr).toBe('err 1\nerr 2\nerr 3\nerr 4\nerr 5\n');
    expect(result.code).toBe(0);
    const out = result.stdout;
    expect(out).toMatch(/^Project\s+main$/m);
    expect(out).toMatch(/^Configuration\s+.*hello\.dstack\.yml$/m);
    expect(out).toMatch(/^Resources\s+cpu=2\.\. mem=8GB\.\. gpu=A100:80GB:2 disk=100GB\.\.$/m);
    expect(out).toMatch(/^Max price\s+\$2$/m);
    expect(out).toMatch(/^#\s+BACKEND\s+REGION\s+RESOURCES\s+INSTANCE TYPE\s+PRICE\s+AVAILABILITY$/m);
    expect(out).toMatch(/^1\s+local\s+local\s+4xCPU, 16GB, 100GB \(disk\)\s+local\s+\$0\s+available$/m);
    expect(out).toContain('and 1 more');
    expect(out).toContain('hello provisioning…');
    // Job output in order, each line once, then the final status.
    const jobOutput = out.slice(out.indexOf('out 1'));
    expect(jobOutput).toBe('out 1\nout 2\nout 3\nout 4\nout 5\nRun hello done\n');
    const plan = server.requestsTo('runs/get_plan')[0]?.body as { run_spec: RunSpec; max_offers: number };
    // dstack's CLI asks for as many offers as it shows (`--max-offers`, default 3).
    expect(plan.max_offers).toBe(3);
    expect(plan.run_spec).toMatchObject({ run_name: 'hello', configuration_path: file });
    expect(plan.run_spec.configuration).toMatchObject({
      type: 'task',
      resources: { gpu: { name: ['A100'], count: { min: 2, max: 2 } } },
    });
    expect(server.requestsTo('runs/apply')[0]?.body).toMatchObject({
      plan: { run_spec: { run_name: 'hello' } },
      force: false,
    });
    expect(server.requestsTo('runs/stop')).toEqual([]);
  });

  it('prints the same output through logs/stream, without polling logs', async () => {
    const script = {
      statuses: ['submitted', 'provisioning', 'running', 'running', 'running', 'running', 'done'],
      logs: interleavedLogs(),
    } satisfies Omit<ScriptedRun, 'name'>;
    const results = [];
    for (const stream of [true, false]) {
      server = await FakeDstackServer.start({
        handlers: scriptedRunHandlers({ name: 'hello', ...script }, { stream }),
      });
      await harness.useProject(server.url, server.token);
      results.push(await harness.run(['apply', '-f', writeTask('hello'), '-y']));
      // With the stream, logs/poll is never asked; without it (404), the CLI falls back to it.
      expect(server.requestsTo('logs/stream')).toHaveLength(1);
      expect(server.requestsTo('logs/poll').length > 0).toBe(!stream);
      expect(server.problems).toEqual([]);
      await server.close();
      server = undefined;
    }
    const [streamed, polled] = results;
    expect(streamed?.stderr).toBe('err 1\nerr 2\nerr 3\nerr 4\nerr 5\n');
    expect(streamed?.stdout).toContain('hello provisioning…');
    expect(streamed?.stdout.slice(streamed.stdout.indexOf('out 1'))).toBe(
      'out 1\nout 2\nout 3\nout 4\nout 5\nRun hello done\n',
    );
    expect(streamed).toEqual(polled);
  });

  it('prints where a service is published once it runs, and keeps following its logs', async () => {
    const handlers = scriptedRunHandlers({
      name: 'web',
      statuses: ['submitted', 'provisioning', 'running', 'running', 'running', 'done'],
      logs: interleavedLogs(),
    });
    const getRun = handlers['runs/get'] as FakeHandler;
    server = await FakeDstackServer.start({
      handlers: {
        ...handlers,
        'runs/get': (...args: Parameters<FakeHandler>) => ({
          ...(getRun(...args) as object),
          service: {
            url: '/proxy/services/main/web/',
            model: { name: 'org/model-7b', base_url: '/proxy/services/main/web/v1', type: 'chat' },
            options: {},
          },
        }),
      },
    });
    await harness.useProject(server.url, server.token);
    const file = join(harness.home, 'web.dstack.yml');
    writeFileSync(file, 'type: service\nname: web\nport: 8000\nmodel: org/model-7b\ncommands:\n  - serve\n');
    const result = await harness.run(['apply', '-f', file, '-y']);
    expect(result.code).toBe(0);
    const endpoint =
      `Service is published at:\n  ${server.url}/proxy/services/main/web/\n` +
      `Model org/model-7b is published at:\n  ${server.url}/proxy/services/main/web/v1\n`;
    // Once, before the job output it keeps following.
    expect(result.stdout.split('Service is published at:')).toHaveLength(2);
    expect(result.stdout).toContain(endpoint);
    expect(result.stdout.indexOf(endpoint)).toBeLessThan(result.stdout.indexOf('out 1'));
    expect(result.stdout).toMatch(/out 5\nRun web done\n$/);
  });

  it('exits 1 and prints the exit status when the run fails', async () => {
    server = await FakeDstackServer.start({
      handlers: scriptedRunHandlers({
        name: 'broken',
        statuses: ['provisioning', 'running', 'failed'],
        logs: [makeLogEvent('stderr', 'boom\n', 5)],
        exitStatus: 3,
      }),
    });
    await harness.useProject(server.url, server.token);
    const result = await harness.run(['apply', '-f', writeTask('broken'), '-y']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('boom\n');
    expect(result.stdout).toMatch(/Run broken failed \(exit status 3\)\n$/);
  });

  it('prints the run name and exits at once with -d', async () => {
    server = await FakeDstackServer.start({
      handlers: scriptedRunHandlers({ name: 'detached', statuses: ['running'], logs: [] }),
    });
    await harness.useProject(server.url, server.token);
    const result = await harness.run(['apply', '-f', writeTask('detached'), '-y', '-d']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/\ndetached\n$/);
    expect(server.requestsTo('runs/get')).toEqual([]);
  });

  it('uses -n as the run name', async () => {
    server = await FakeDstackServer.start({
      handlers: scriptedRunHandlers({ name: 'renamed', statuses: ['running'], logs: [] }),
    });
    await harness.useProject(server.url, server.token);
    const result = await harness.run(['apply', '-f', writeTask('original'), '-y', '-d', '-n', 'renamed']);
    expect(result.code).toBe(0);
    expect(server.requestsTo('runs/get_plan')[0]?.body).toMatchObject({ run_spec: { run_name: 'renamed' } });
  });

  it("sends the user's public key as run_spec.ssh_key_pub, created once and reused", async () => {
    server = await FakeDstackServer.start({
      handlers: scriptedRunHandlers({ name: 'keyed', statuses: ['running'], logs: [] }),
    });
    await harness.useProject(server.url, server.token);
    for (let attempt = 0; attempt < 2; attempt += 1) {
      expect((await harness.run(['apply', '-f', writeTask('keyed'), '-y', '-d'])).code).toBe(0);
    }
    const publicKey = readFileSync(join(harness.home, '.dstack', 'ssh', 'id_rsa.pub'), 'utf8').trim();
    expect(publicKey).toMatch(/^ssh-rsa AAAA\S+ dstack$/);
    const sent = [...server.requestsTo('runs/get_plan'), ...server.requestsTo('runs/apply')].map(
      (request) => request.body as { run_spec?: RunSpec; plan?: { run_spec: RunSpec } },
    );
    expect(sent.map((body) => (body.run_spec ?? body.plan?.run_spec)?.ssh_key_pub)).toEqual(
      Array(4).fill(publicKey),
    );
  });

  it('detaches on SIGINT without stopping the run', async () => {
    server = await FakeDstackServer.start({
      handlers: scriptedRunHandlers({
        name: 'forever',
        statuses: ['running'],
        logs: [makeLogEvent('stdout', 'still going\n', 1)],
      }),
    });
    await harness.useProject(server.url, server.token);
    const cli = harness.start(['apply', '-f', writeTask('forever'), '-y']);
    await waitFor(() => cli.stdout().includes('still going'), 'the job output');
    const getsBefore = server.requestsTo('runs/get').length;
    await waitFor(() => server!.requestsTo('runs/get').length > getsBefore, 'another poll');
    cli.child.kill('SIGINT');
    const result = await cli.result;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Detached; the run continues. Stop it with dstack stop forever');
    expect(server.requestsTo('runs/stop')).toEqual([]);
    expect(server.requestsTo('runs/delete')).toEqual([]);
  });

  it('detaches on SIGINT while following logs/stream', async () => {
    server = await FakeDstackServer.start({
      handlers: scriptedRunHandlers(
        { name: 'forever', statuses: ['running'], logs: [makeLogEvent('stdout', 'still going\n', 1)] },
        { stream: true },
      ),
    });
    await harness.useProject(server.url, server.token);
    const cli = harness.start(['apply', '-f', writeTask('forever'), '-y']);
    await waitFor(() => cli.stdout().includes('still going'), 'the job output');
    cli.child.kill('SIGINT');
    const result = await cli.result;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Detached; the run continues. Stop it with dstack stop forever');
    expect(server.requestsTo('logs/poll')).toEqual([]);
    expect(server.requestsTo('runs/stop')).toEqual([]);
  });

  it('prints the exclusions and exits 1 when no offer matches', async () => {
    server = await FakeDstackServer.start({
      handlers: {
        'runs/get_plan': (body: { run_spec: RunSpec }) =>
          makeRunPlan(
            body.run_spec,
            [],
            [
              { requirement: 'gpu A100', excluded: 12 },
              { requirement: 'max_price 0.1', excluded: 1 },
            ],
          ),
      },
    });
    await harness.useProject(server.url, server.token);
    const result = await harness.run(['apply', '-f', writeTask('nothing'), '-y']);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      'No offers match the requirements.\n  gpu A100: excluded 12 offers\n  max_price 0.1: excluded 1 offer\n',
    );
    expect(server.requestsTo('runs/apply')).toEqual([]);
  });

  it('warns about a backend whose offers are missing from the plan', async () => {
    const warning = 'Offers of backend vastai are missing: the backend did not answer within 10 s';
    server = await FakeDstackServer.start({
      handlers: {
        'runs/get_plan': (body: { run_spec: RunSpec }) => makeRunPlan(body.run_spec, [], [], [warning]),
      },
    });
    await harness.useProject(server.url, server.token);
    const result = await harness.run(['apply', '-f', writeTask('slow-market'), '-y']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`Warning: ${warning}\n`);
    expect(result.stdout).toContain('No offers match the requirements.');
  });

  it('asks for -y when there is no terminal to confirm on', async () => {
    server = await FakeDstackServer.start({
      handlers: scriptedRunHandlers({ name: 'unconfirmed', statuses: ['running'], logs: [] }),
    });
    await harness.useProject(server.url, server.token);
    const result = await harness.run(['apply', '-f', writeTask('unconfirmed')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('pass -y');
    expect(server.requestsTo('runs/apply')).toEqual([]);
  });

  it('reports file:line:column for an invalid file and makes no request', async () => {
    server = await FakeDstackServer.start();
    await harness.useProject(server.url, server.token);
    const file = join(harness.home, 'bad.dstack.yml');
    writeFileSync(file, 'type: task\ncommands:\n  - echo hi\nresources:\n  gpu: "A100:lots"\n');
    const result = await harness.run(['apply', '-f', file, '-y']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(new RegExp(`^${file.replaceAll('.', '\\.')}:5:8: resources\\.gpu: .+\\n$`));
    expect(server.requests).toEqual([]);
  });

  it('says how to fix a rejected token', async () => {
    server = await FakeDstackServer.start({ token: 'right-token' });
    await harness.useProject(server.url, 'wrong-token');
    const result = await harness.run(['apply', '-f', writeTask('denied'), '-y']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `error: invalid token for project main (server ${server.url}); run dstack project add --name main --url ${server.url} --token TOKEN -y\n`,
    );
  });

  it('prints the server error with its field path', async () => {
    server = await FakeDstackServer.start({
      handlers: {
        'runs/get_plan': () =>
          new HttpAnswer(400, {
            detail: [
              {
                msg: 'no backend offers A100',
                code: 'invalid',
                fields: [['run_spec', 'configuration', 'resources', 'gpu']],
              },
            ],
          }),
      },
    });
    await harness.useProject(server.url, server.token);
    const result = await harness.run(['apply', '-f', writeTask('rejected'), '-y']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('error: run_spec.configuration.resources.gpu: no backend offers A100\n');
  });

  it('names the field once when the server message already starts with it', async () => {
    server = await FakeDstackServer.start({
      handlers: {
        'runs/get_plan': () =>
          new HttpAnswer(400, {
            detail: [
              {
                msg: 'run_spec.configuration: field required',
                code: 'invalid_request',
                fields: [['run_spec', 'configuration']],
              },
            ],
          }),
      },
    });
    await harness.useProject(server.url, server.token);
    const result = await harness.run(['apply', '-f', writeTask('unnamed'), '-y']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('error: run_spec.configuration: field required\n');
  });

  it('says when the server cannot be reached', async () => {
    await harness.useProject('http://127.0.0.1:9', 'token');
    const result = await harness.run(['apply', '-f', writeTask('offline'), '-y']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'cannot reach the dstack server at http://127.0.0.1:9: is `dstack server` running?\n',
    );
  });

  it('applies a fleet configuration', async () => {
    server = await FakeDstackServer.start({ handlers: { 'fleets/apply': () => makeFleet('my-fleet', 2) } });
    await harness.useProject(server.url, server.token);
    const file = join(harness.home, 'fleet.dstack.yml');
    writeFileSync(file, 'type: fleet\nname: my-fleet\nnodes: 2\n');
    const result = await harness.run(['apply', '-f', file, '-y']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^NAME\s+NODES\s+RESOURCES\s+BACKEND\s+PRICE\s+STATUS\s+CREATED$/m);
    expect(result.stdout).toMatch(
      /^my-fleet\s+2\s+4xCPU, 16GB, 100GB \(disk\)\s+local \(local\)\s+\$0\.5\s+idle/m,
    );
    expect(server.requestsTo('fleets/apply')[0]?.body).toMatchObject({
      plan: { spec: { configuration: { type: 'fleet', name: 'my-fleet' } } },
    });
  });
});
