import type { Run } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { makeRun } from '../__fixtures__/api-objects.js';
import { waitingLine } from './attach-run.js';

describe('the progress line of a waiting run', () => {
  it("says when a scheduled run starts next, as dstack's CLI", () => {
    const base = makeRun({ name: 'nightly', status: 'pending' });
    const scheduled = {
      ...base,
      run_spec: {
        ...base.run_spec,
        configuration: { ...base.run_spec.configuration, schedule: { cron: ['0 8 * * *'] } },
      },
      next_triggered_at: '2026-12-07T08:00:00.000Z',
    } as Run;
    expect(waitingLine('nightly', scheduled)).toBe(
      'nightly is waiting for schedule… Next run: 2026-12-07 08:00 UTC',
    );
  });

  it('is the status of any other waiting run', () => {
    expect(waitingLine('train', makeRun({ name: 'train', status: 'pending' }))).toBe('train pending…');
    expect(waitingLine('train', makeRun({ name: 'train', status: 'submitted' }))).toBe('train submitted…');
  });
});
