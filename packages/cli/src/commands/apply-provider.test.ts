/** `dstack apply` on a task with a custom provider: the built bin, a fake server, real provider modules. */
import { readFileSync } from 'node:fs';
import type { RunSpec } from '@dstack/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { makeOffer, makeRun, makeRunPlan } from '../__fixtures__/api-objects.js';
import { CLI_TEST_TIMEOUT_MS, CliHarness } from '../__fixtures__/cli-harness.js';
import { FakeDstackServer } from '../__fixtures__/fake-dstack-server.js';
import { ProviderProject } from '../__fixtures__/provider-project.js';

let harness: CliHarness;
let project: ProviderProject;
let server: FakeDstackServer | undefined;

beforeEach(() => {
  harness = new CliHarness();
  project = new ProviderProject();
});

afterEach(async () => {
  harness.cleanUp();
  project.remove();
  const problems = server?.problems ?? [];
  await server?.close();
  server = undefined;
  expect(problems).toEqual([]);
});

/** The curl example (configuration and provider) in the project, with `parameters` replaced. */
function writeCurlExample(parameters: Record<string, unknown>): string {
  project.copyExample('providers/curl.mjs');
  const file = project.copyExample('curl.dstack.yml');
  const example = parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  return project.write('curl.dstack.yml', stringify({ ...example, parameters }));
}

async function startServer(): Promise<FakeDstackServer> {
  server = await FakeDstackServer.start({
    handlers: {
      'runs/get_plan': (body: { run_spec: RunSpec }) => makeRunPlan(body.run_spec, [makeOffer({ price: 0 })]),
      'runs/apply': () => makeRun({ name: 'curl', status: 'submitted' }),
    },
  });
  await harness.useProject(server.url, server.token);
  return server;
}

describe('dstack apply with a provider (built bin, fake server)', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it("sends the provider's jobs with the plan and the run, and shows them in the plan", async () => {
    const fake = await startServer();
    const file = writeCurlExample({ url: 'https://example.com/data.csv', output: 'data.csv' });
    const result = await harness.run(['apply', '-f', file, '-y', '-d']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const command = "curl -fsSL 'https://example.com/data.csv' -o 'data.csv'";
    expect(result.stdout).toMatch(/^Provider\s+\.\/providers\/curl\.mjs$/m);
    const jobLines = result.stdout.split('\n').filter((line) => line.startsWith('Job '));
    expect(jobLines.map((line) => line.replace(/^Job 0\s+/, ''))).toEqual([`curl: ${command}`]);
    const providerJobs = [{ name: 'curl', commands: [command] }];
    const plan = fake.requestsTo('runs/get_plan')[0]?.body as { run_spec: RunSpec };
    expect(plan.run_spec.provider_jobs).toEqual(providerJobs);
    // The configuration travels as written, for display; the server runs provider_jobs.
    expect(plan.run_spec.configuration).toMatchObject({
      type: 'task',
      provider: './providers/curl.mjs',
      parameters: { url: 'https://example.com/data.csv', output: 'data.csv' },
      commands: [],
    });
    const apply = fake.requestsTo('runs/apply')[0]?.body as { plan: { run_spec: RunSpec } };
    expect(apply.plan.run_spec.provider_jobs).toEqual(providerJobs);
  });

  it('reports a bad parameter as file:line:column and sends nothing', async () => {
    const fake = await startServer();
    project.copyExample('providers/curl.mjs');
    const file = project.write(
      'curl.dstack.yml',
      'type: task\nprovider: ./providers/curl.mjs\nparameters:\n  url: https://example.com/a\n  output: ""\n',
    );
    const result = await harness.run(['apply', '-f', file, '-y']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(`${file}:5:11: parameters.output: must not be empty\n`);
    expect(fake.requests).toEqual([]);
  });

  it('reports a module that is not a provider', async () => {
    const fake = await startServer();
    project.write('providers/plain.mjs', 'export default { name: "plain" };\n');
    const file = project.write('plain.dstack.yml', 'type: task\nprovider: ./providers/plain.mjs\n');
    const result = await harness.run(['apply', '-f', file, '-y']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'error: "./providers/plain.mjs" is not a dstack provider: its default export is object without $$type "@dstack/Provider"; export default defineProvider({ name, schema, createJobs }) from @dstack/core\n',
    );
    expect(fake.requests).toEqual([]);
  });
});
