import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import localPlugin, { LocalCompute } from '@dstack/backend-local';
import { type RunConfiguration, runConfigurationSchema } from '@dstack/core';
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

  it('passes without an image, with the default image, or when a backend can run it', () => {
    const processOnly = [localBackend('process')];
    expect(unsupportedRunFields(task({}), processOnly)).toEqual([]);
    // `python:` picks the default image's tag: still the host on a backend without containers.
    expect(unsupportedRunFields(task({ python: '3.11' }), processOnly)).toEqual([]);
    expect(unsupportedRunFields(task({ image: DEFAULT_JOB_IMAGE }), processOnly)).toEqual([]);
    expect(unsupportedRunFields(task({ image: 'python:3.11' }), [localBackend('docker')])).toEqual([]);
  });
});
