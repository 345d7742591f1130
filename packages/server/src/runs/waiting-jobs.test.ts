/**
 * Jobs waiting in `submitted` for capacity that frees by itself (the local host): a job that
 * ends makes the longest-waiting one due at once, so it takes the freed share without waiting
 * for its next look.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPipelineHarness, type PipelineHarness } from '../testing/pipeline-harness.test.helpers.js';

// Real agents start and stop here; nothing is timed, the limits only catch hangs.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let harness: PipelineHarness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe('a job that ends', () => {
  it('makes the longest-waiting submitted job due at once, and only that one', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const ending = await h.applyTask('ending', { commands: ['true'] });
    await h.stepUntil(async () => (await h.jobs(ending.id))[0]?.status === 'running');
    const older = await h.applyTask('older', { commands: ['true'] });
    h.advance(1_000);
    const newer = await h.applyTask('newer', { commands: ['true'] });
    // Both looked for capacity a moment ago and wait for their next look.
    const lookedAt = h.now();
    await h.app.db
      .updateTable('jobs')
      .set({ last_processed_at: lookedAt })
      .where('run_id', 'in', [older.id, newer.id])
      .execute();

    await h.stepUntil(async () => (await h.jobs(ending.id))[0]?.status === 'done', {
      pipelines: ['jobs-running', 'jobs-terminating'],
    });

    expect((await h.jobs(older.id))[0]).toMatchObject({ status: 'submitted', last_processed_at: 0 });
    expect((await h.jobs(newer.id))[0]).toMatchObject({ status: 'submitted', last_processed_at: lookedAt });
  });
});
