import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import localPlugin, { LocalCompute } from '@dstack/backend-local';
import { type Capability, type RunConfiguration, runConfigurationSchema } from '@dstack/core';
import { DEFAULT_JOB_IMAGE } from '@dstack/core/agent-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectBackend } from '../backends/registry.js';
import { unsupportedRunFields } from './unsupported-fields.js';

describe('image at plan time', () => {
  let instancesDir: string;
  const localBackend = (runtime: 'process' | 'docker'): ProjectBackend => ({
    type: 'local',
    plugin: localPlugin,
    compute: new LocalCompute({ runtime, instancesDir }),
  });
  const task = (fields: Record<string, unknown>): RunConfiguration =>
    runConfigurationSchema.parse({ type: 'task', commands: ['true'], ...fields });

  beforeAll(async () => {
    instancesDir = await mkdtemp(join(tmpdir(), 'dstack-unsupported-fields-'));
  });
  afterAll(async () => {
    await rm(instancesDir, { recursive: true, force: true });
  });

  it('is refused, with the reason and the fix, when the only backend runs jobs as processes', () => {
    expect(unsupportedRunFields(task({ image: 'python:3.11' }), [localBackend('process')])).toEqual([
      { path: 'image', reason: expect.stringContaining('set `runtime: docker` on the local backend') },
    ]);
  });

  it("refuses `docker: true` (dstack's dind image) as an image, and passes it where images run", () => {
    expect(unsupportedRunFields(task({ docker: true }), [localBackend('process')])).toEqual([
      { path: 'docker', reason: expect.stringContaining('set `runtime: docker` on the local backend') },
    ]);
    expect(unsupportedRunFields(task({ docker: true }), [localBackend('docker')])).toEqual([]);
  });

  it('passes without an image, with the default image, or when a backend can run it', () => {
    const processOnly = [localBackend('process')];
    expect(unsupportedRunFields(task({}), processOnly)).toEqual([]);
    // `python:` makes the venv of the default image: still the host on a backend without containers.
    expect(unsupportedRunFields(task({ python: '3.11' }), processOnly)).toEqual([]);
    expect(unsupportedRunFields(task({ image: DEFAULT_JOB_IMAGE }), processOnly)).toEqual([]);
    expect(unsupportedRunFields(task({ image: 'python:3.11' }), [localBackend('docker')])).toEqual([]);
  });
});

describe('nodes at plan time', () => {
  const task = (fields: Record<string, unknown>): RunConfiguration =>
    runConfigurationSchema.parse({ type: 'task', commands: ['true'], ...fields });
  const backend = (type: string, capabilities: Capability[]): ProjectBackend =>
    ({ type, compute: { type, capabilities } }) as unknown as ProjectBackend;
  const vastai = backend('vastai', []);
  const local = backend('local', ['create-instance', 'multinode']);

  it('is refused when no eligible backend gives the nodes a shared network', () => {
    expect(unsupportedRunFields(task({ nodes: 2 }), [vastai])).toEqual([
      { path: 'nodes', reason: expect.stringContaining('(vastai: its instances share no network)') },
    ]);
    // `backends` narrows who is eligible.
    expect(unsupportedRunFields(task({ nodes: 2, backends: ['vastai'] }), [vastai, local])).toHaveLength(1);
  });

  it('passes with a multinode backend, an SSH cluster fleet, or one node', () => {
    expect(unsupportedRunFields(task({ nodes: 2 }), [vastai, local])).toEqual([]);
    expect(unsupportedRunFields(task({ nodes: 2 }), [vastai], { sshClusterFleet: true })).toEqual([]);
    expect(unsupportedRunFields(task({ nodes: 1 }), [vastai])).toEqual([]);
    expect(
      unsupportedRunFields(task({ nodes: 2, startup_order: 'workers-first', stop_criteria: 'master-done' }), [
        local,
      ]),
    ).toEqual([]);
  });
});
