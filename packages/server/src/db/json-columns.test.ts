import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseConfiguration } from '@dstack/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildJobSpecs } from '../runs/job-specs.js';
import { normalizeRunSpec } from '../runs/stored-run-spec.js';
import { createPipelineHarness, type PipelineHarness } from '../testing/pipeline-harness.test.helpers.js';
import {
  fleetSpecColumn,
  instanceConfigurationColumn,
  instanceOfferColumn,
  instanceProvisioningDataColumn,
  instanceRequirementsColumn,
  jobProvisioningDataColumn,
  jobRuntimeDataColumn,
  jobSpecColumn,
  runSpecColumn,
  StoredJsonError,
} from './json-columns.js';

const EXAMPLES_DIR =
  process.env.DSTACK_EXAMPLES_DIR ?? fileURLToPath(new URL('../../../../examples/dstack/', import.meta.url));
const examples = readdirSync(EXAMPLES_DIR)
  .filter((name) => /\.dstack\.ya?ml$/.test(name))
  .map((name) => ({
    name,
    configuration: parseConfiguration(readFileSync(`${EXAMPLES_DIR}/${name}`, 'utf8'), { path: name }),
  }));
const runExamples = examples.filter(({ configuration }) =>
  ['task', 'service', 'dev-environment'].includes(configuration.type),
);

describe('the JSON columns round-trip what the server stores', () => {
  it('has run and fleet examples to check', () => {
    expect(runExamples.length).toBeGreaterThan(15);
    expect(examples.filter(({ configuration }) => configuration.type === 'fleet').length).toBeGreaterThan(2);
  });

  it.each(runExamples)('runs.run_spec and jobs.job_spec_data of $name', ({ name, configuration }) => {
    const provider = configuration.type === 'task' && configuration.provider !== undefined;
    const runSpec = normalizeRunSpec({
      configuration,
      ssh_key_pub: 'ssh-ed25519 AAAA user@host',
      repo_id: 'repo',
      ...(provider ? { provider_jobs: [{ commands: ['true'] }] } : {}),
    });
    expect(runSpecColumn.decode(runSpecColumn.encode(runSpec), name)).toEqual(runSpec);
    for (const jobSpec of buildJobSpecs('example', runSpec)) {
      expect(jobSpecColumn.decode(jobSpecColumn.encode(jobSpec), name)).toEqual(jobSpec);
    }
  });

  it.each(examples.filter(({ configuration }) => configuration.type === 'fleet'))(
    'fleets.spec of $name',
    ({ name, configuration }) => {
      if (configuration.type !== 'fleet') throw new Error('not a fleet');
      const spec = { configuration };
      expect(fleetSpecColumn.decode(fleetSpecColumn.encode(spec), name)).toEqual(spec);
    },
  );
});

describe('the JSON columns of rows the pipelines wrote', () => {
  vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });
  let harness: PipelineHarness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });

  it('decode to exactly what was stored, for a job run to its end on an instance', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const run = await h.applyTask('stored', { commands: ['echo hi'], ports: [8080] });
    await h.stepUntil(async () => (await h.jobs(run.id))[0]?.status === 'running');
    const [job] = await h.jobs(run.id);
    if (!job) throw new Error('the run has no job');
    const instance = await h.instance(job.instance_id);
    const stored: Array<[{ decode(text: string, rowId: string): unknown }, string | null | undefined]> = [
      [runSpecColumn, run.run_spec],
      [jobSpecColumn, job.job_spec_data],
      [jobProvisioningDataColumn, job.job_provisioning_data],
      [jobRuntimeDataColumn, job.job_runtime_data],
      [instanceOfferColumn, instance.offer],
      [instanceProvisioningDataColumn, instance.job_provisioning_data],
      [instanceRequirementsColumn, instance.requirements],
      [instanceConfigurationColumn, instance.instance_configuration],
    ];
    for (const [column, text] of stored) {
      if (text === null || text === undefined) continue;
      expect(column.decode(text, 'row')).toEqual(JSON.parse(text));
    }
    expect(job.job_provisioning_data).not.toBeNull();
    expect(job.job_runtime_data).not.toBeNull();
    expect(instance.offer).not.toBeNull();
  });
});

describe('a stored document the schema refuses', () => {
  it('is an error naming the table, the column and the row', () => {
    expect(() => jobSpecColumn.decode('{"job_name": 1}', 'job-1')).toThrow(StoredJsonError);
    expect(() => jobSpecColumn.decode('{"job_name": 1}', 'job-1')).toThrow(
      /^jobs\.job_spec_data of row job-1 is not valid: job_name: /,
    );
    expect(() => runSpecColumn.decode('{"configuration": {"type": "fleet"}', 'run-1')).toThrow(
      /^runs\.run_spec of row run-1 is not valid: not JSON/,
    );
    expect(() => runSpecColumn.decode('{"configuration": {"type": "volume"}}', 'run-2')).toThrow(
      /^runs\.run_spec of row run-2 is not valid: configuration\.type: /,
    );
  });
});

describe('decoded values', () => {
  it('are shared by readers of the same stored text, and frozen so no reader changes them for another', () => {
    const text = runSpecColumn.encode(
      normalizeRunSpec({ configuration: { type: 'task', commands: ['true'] } }),
    );
    const first = runSpecColumn.decode(text, 'run-1');
    expect(runSpecColumn.decode(text, 'run-1')).toBe(first);
    expect(Object.isFrozen(first.configuration)).toBe(true);
    expect(() => {
      (first.configuration as { name?: string }).name = 'changed';
    }).toThrow(TypeError);
  });
});
