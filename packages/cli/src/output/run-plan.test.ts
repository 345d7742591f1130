import { type Run, runConfigurationSchema } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { makeRun, makeRunPlan, makeRunSpec } from '../__fixtures__/api-objects.js';
import { formatRuns } from '../commands/ps-table.js';
import { createColors } from './colors.js';
import { formatRunPlan } from './run-plan.js';

const plain = createColors(false);

describe('reservation in the plan and in ps -v, as dstack shows it', () => {
  it('adds a Reservation row to the plan only when the run names one', () => {
    const configuration = runConfigurationSchema.parse({ type: 'task', commands: ['true'] });
    const plan = makeRunPlan(makeRunSpec('reserved'), []);
    expect(formatRunPlan(plan, configuration, 'task.yml', plain)).not.toContain('Reservation');
    const reserved = runConfigurationSchema.parse({
      type: 'task',
      commands: ['true'],
      reservation: 'cr-0e000000000000001',
    });
    expect(formatRunPlan(plan, reserved, 'task.yml', plain)).toMatch(/^Reservation\s+cr-0e000000000000001$/m);
  });

  it('shows the reservation after the instance type of a run in one', () => {
    const run = makeRun({
      name: 'reserved',
      status: 'running',
      provisioned: { backend: 'aws', region: 'us-east-1', price: 1, gpus: 1 },
    });
    const submission = run.latest_job_submission;
    const data = submission?.job_provisioning_data;
    if (!submission || !data) throw new Error('the run has no provisioning data');
    const inReservation = {
      ...run,
      latest_job_submission: {
        ...submission,
        job_provisioning_data: { ...data, reservation: 'cr-0e000000000000001' },
      },
    } as Run;
    const table = formatRuns([inReservation, run], {
      verbose: true,
      colors: plain,
      serverUrl: 'http://127.0.0.1:3000',
    });
    const [, reservedRow, plainRow] = table.split('\n');
    expect(reservedRow).toContain(`${data.instance_type.name} (cr-0e000000000000001)`);
    expect(plainRow).not.toContain('cr-');
  });
});
