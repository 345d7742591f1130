/**
 * Honest configurations: every field of every configuration schema has a decision (a field
 * added to core without one fails here), and every refused field is refused through the API.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONFIGURATION_SCHEMAS, type ConfigurationType, schemaFieldPaths } from '@dstack/core';
import { createFakeBackendPlugin, FAKE_BACKEND_VALID_API_KEY } from '@dstack/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { allRoutes } from './api-routes.js';
import { decisionFor, type FieldDecisions, isRefused } from './field-decisions.js';
import { FLEET_FIELD_DECISIONS } from './fleets/unsupported-fields.js';
import { GATEWAY_FIELD_DECISIONS } from './gateways/unsupported-fields.js';
import { RUN_FIELD_DECISIONS } from './runs/unsupported-fields.js';
import { createTestApp, type TestApp } from './testing/test-app.test.helpers.js';
import { VOLUME_FIELD_DECISIONS } from './volumes/unsupported-fields.js';

const TABLES: Record<ConfigurationType, FieldDecisions> = {
  task: RUN_FIELD_DECISIONS,
  service: RUN_FIELD_DECISIONS,
  'dev-environment': RUN_FIELD_DECISIONS,
  fleet: FLEET_FIELD_DECISIONS,
  gateway: GATEWAY_FIELD_DECISIONS,
  volume: VOLUME_FIELD_DECISIONS,
};

const BASES: Record<string, Record<string, unknown>> = {
  task: { type: 'task', commands: ['true'] },
  service: { type: 'service', commands: ['true'], port: 8000 },
  'dev-environment': { type: 'dev-environment' },
  gateway: { type: 'gateway', backend: 'fake', region: 'r', certificate: null },
  fleet: { type: 'fleet', nodes: 0 },
};

describe('every configuration field is honoured or refused', () => {
  for (const [type, schema] of Object.entries(CONFIGURATION_SCHEMAS)) {
    it(`${type}: each field has a decision`, () => {
      const table = TABLES[type as ConfigurationType];
      const missing = schemaFieldPaths(schema).filter((path) => decisionFor(table, path) === undefined);
      expect(missing).toEqual([]);
    });
  }
});

describe('refused fields through the API', () => {
  let server: TestApp;
  beforeAll(async () => {
    server = await createTestApp({
      dialect: 'sqlite',
      routes: allRoutes,
      plugins: [createFakeBackendPlugin()],
      config: {
        projects: [
          {
            name: 'main',
            backends: [{ type: 'fake', creds: { type: 'api_key', api_key: FAKE_BACKEND_VALID_API_KEY } }],
          },
        ],
      },
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  const runPlan = (configuration: unknown) =>
    server.request('/api/project/main/runs/get_plan', { run_spec: { configuration } });
  const runApply = (configuration: unknown) =>
    server.request('/api/project/main/runs/apply', { plan: { run_spec: { configuration } }, force: false });
  const fleetApply = (configuration: unknown) =>
    server.request('/api/project/main/fleets/apply', { plan: { spec: { configuration } } });

  for (const [path, decision] of Object.entries(RUN_FIELD_DECISIONS)) {
    if (!isRefused(decision)) continue;
    it(`run: ${path} is refused at plan and apply`, async () => {
      const type =
        path.startsWith('model') ||
        path.startsWith('replicas') ||
        ['gateway', 'https', 'strip_prefix', 'scaling', 'rate_limits', 'probes'].includes(path)
          ? 'service'
          : ['ide', 'version'].includes(path)
            ? 'dev-environment'
            : 'task';
      const configuration = { ...BASES[type], ...decision.example };
      for (const response of [await runPlan(configuration), await runApply(configuration)]) {
        expect(response.status, JSON.stringify(response.body)).toBe(400);
        expect(response.body.detail[0].code).toBe('unsupported_fields');
        // A field inside a list is named at its index: `replicas[0].docker`.
        expect(response.body.detail[0].msg).toContain(`${path.replaceAll('[]', '[0]')}: `);
      }
    });
  }

  for (const [path, decision] of Object.entries(FLEET_FIELD_DECISIONS)) {
    if (!isRefused(decision)) continue;
    it(`fleet: ${path} is refused at apply`, async () => {
      const configuration = JSON.parse(JSON.stringify({ ...BASES.fleet, ...decision.example }));
      const response = await fleetApply(configuration);
      expect(response.status, JSON.stringify(response.body)).toBe(400);
      expect(response.body.detail[0].code).toBe('unsupported_fields');
      expect(response.body.detail[0].msg).toContain(`${path.replace('[]', '[0]')}: `);
    });
  }

  for (const [path, decision] of Object.entries(GATEWAY_FIELD_DECISIONS)) {
    if (!isRefused(decision)) continue;
    it(`gateway: ${path} is refused at create`, async () => {
      const configuration = { ...BASES.gateway, ...decision.example };
      const response = await server.request('/api/project/main/gateways/create', { configuration });
      expect(response.status, JSON.stringify(response.body)).toBe(400);
      expect(response.body.detail[0].code).toBe('unsupported_fields');
      expect(response.body.detail[0].msg).toContain(`${path}: `);
    });
  }

  it('one error lists every refused field, with its value', async () => {
    const response = await runPlan({
      ...BASES.service,
      setup: ['true'],
      strip_prefix: false,
    });
    expect(response.status).toBe(400);
    const message: string = response.body.detail[0].msg;
    expect(message, message).toContain('setup: not supported yet (use commands)');
    expect(message).toContain('strip_prefix: only true is supported yet');
  });

  it('service replicas, scaling, probes, rate limits and replica groups pass', async () => {
    const honoured = await runPlan({
      ...BASES.service,
      probes: [{ type: 'http', url: '/health' }],
      replicas: '0..4',
      scaling: { metric: 'rps', target: 1 },
      rate_limits: [{ rps: 1 }],
    });
    expect(honoured.status).toBe(200);
    const groups = await runPlan({
      ...BASES.service,
      commands: [],
      replicas: [
        { name: 'small', count: 1, commands: ['true'] },
        { count: '0..2', scaling: { metric: 'rps', target: 5 }, commands: ['true'], resources: { cpu: 1 } },
      ],
    });
    expect(groups.status).toBe(200);
    expect(
      groups.body.job_plans.map(
        (plan: { job_spec: { replica_group: string } }) => plan.job_spec.replica_group,
      ),
    ).toEqual(['small', '1']);
  });

  it('reservation is refused when no eligible backend supports reservations', async () => {
    const response = await runPlan({ ...BASES.task, reservation: 'cr-1' });
    expect(response.status).toBe(400);
    expect(response.body.detail[0].msg).toContain(
      'reservation: no eligible backend supports reservations (eligible: fake)',
    );
    const fleet = await fleetApply({ ...BASES.fleet, reservation: 'cr-1' });
    expect(fleet.body.detail[0].msg).toContain('reservation: no eligible backend supports reservations');
  });

  it('utilization_policy is refused at plan and apply when no offer has a GPU, and over the metrics TTL', async () => {
    const policy = { utilization_policy: { min_gpu_utilization: 10, time_window: '10m' } };
    // `gpu: 0`: only the fake cloud's CPU types.
    const cpuOnly = { ...BASES.task, ...policy, resources: { gpu: 0 } };
    for (const response of [await runPlan(cpuOnly), await runApply(cpuOnly)]) {
      expect(response.status, JSON.stringify(response.body)).toBe(400);
      expect(response.body.detail[0].code).toBe('unsupported_fields');
      expect(response.body.detail[0].msg).toContain('utilization_policy: none of the ');
      expect(response.body.detail[0].msg).toContain('offers has a GPU');
    }
    const gpu = await runPlan({ ...BASES.task, ...policy, resources: { gpu: 1 } });
    expect(gpu.status, JSON.stringify(gpu.body)).toBe(200);
    expect(gpu.body.job_plans[0].job_spec.utilization_policy).toEqual({
      min_gpu_utilization: 10,
      time_window: 600,
    });
    // dstack's limit: the samples of a running job are kept an hour.
    const long = await runPlan({
      ...BASES.task,
      resources: { gpu: 1 },
      utilization_policy: { min_gpu_utilization: 10, time_window: '2h' },
    });
    expect(long.status).toBe(400);
    expect(long.body.detail[0].msg).toBe('Maximum utilization_policy.time_window is 3600s');
  });

  it('a volume the project does not have is refused at plan, naming it', async () => {
    const response = await runPlan({ ...BASES.task, volumes: ['missing-volume:/data'] });
    expect(response.status).toBe(400);
    expect(response.body.detail[0].msg).toBe('volumes: volume missing-volume not found');
  });

  it('gateway and volume configurations are refused outside their own routes', async () => {
    for (const configuration of [
      { type: 'gateway', backend: 'aws', region: 'us-east-1' },
      { type: 'volume', backend: 'aws', region: 'us-east-1', size: 100 },
    ]) {
      expect((await runPlan(configuration)).status).toBe(400);
      expect((await fleetApply(configuration)).status).toBe(400);
    }
  });

  it('defaults, empty values and honoured fields pass', async () => {
    const task = {
      ...BASES.task,
      name: 'honest-task',
      image: 'ubuntu',
      user: 'root',
      working_dir: '/work',
      env: { A: '1' },
      resources: { cpu: '1..', memory: '1GB..', shm_size: '1GB', disk: '1GB..' },
      ports: [8080],
      max_duration: '1h',
      stop_duration: '1m',
      retry: { on_events: ['error'], duration: '10m' },
      spot_policy: 'auto',
      backends: ['fake'],
      idle_duration: '5m',
      creation_policy: 'reuse-or-create',
      tags: { team: 'a' },
      privileged: false,
      dstack: false,
      docker: false,
      nvcc: false,
      python: undefined,
      priority: 0,
      startup_order: 'any',
      stop_criteria: 'all-done',
      nodes: 1,
      volumes: [],
      repos: [],
      files: [],
      setup: [],
    };
    const plan = await runPlan(task);
    expect(plan.status, JSON.stringify(plan.body)).toBe(200);
    const service = await runPlan({
      ...BASES.service,
      replicas: 1,
      gateway: false,
      auth: false,
      model: 'm',
      strip_prefix: true,
      python: '3.10',
      nvcc: true,
    });
    expect(service.status, JSON.stringify(service.body)).toBe(200);
    const devEnvironment = await runPlan({
      ...BASES['dev-environment'],
      setup: ['true'],
      init: ['true'],
      inactivity_duration: '1h',
    });
    expect(devEnvironment.status, JSON.stringify(devEnvironment.body)).toBe(200);
    const fleet = await fleetApply({
      ...BASES.fleet,
      name: 'honest-fleet',
      env: {},
      retry: false,
      placement: 'any',
      blocks: 1,
      idle_duration: '1h',
    });
    expect(fleet.status, JSON.stringify(fleet.body)).toBe(200);
  });

  it("dstack's example configurations: which are refused", async () => {
    const dir =
      process.env.DSTACK_EXAMPLES_DIR ?? fileURLToPath(new URL('../../../examples/dstack/', import.meta.url));
    const refused: string[] = [];
    for (const file of readdirSync(dir)
      .filter((name) => /\.dstack\.ya?ml$/.test(name))
      .sort()) {
      const configuration = parse(readFileSync(join(dir, file), 'utf8'));
      if (!['task', 'service', 'dev-environment'].includes(configuration.type)) continue;
      const response = await runPlan(configuration);
      if (response.status === 400) refused.push(`${file}: ${response.body.detail[0].msg}`);
      else expect(response.status, file).toBe(200);
    }
    console.log(refused.join('\n'));
    expect(refused.length).toBeGreaterThan(0);
  });
});
