/** What the end-to-end tests of the cloud backends (on their emulators) ask of a harness server. */
import type { InstanceOfferWithAvailability, Run } from '@dstack/core';
import { expect } from 'vitest';
import { type HarnessServer, waitFor } from './server-harness.js';

/** A GPU task on an emulated cloud (the hosts have no GPU; the process runtime does not ask). */
export function gpuTask(name: string, commands: string[], extra: Record<string, unknown> = {}) {
  return { type: 'task', name, commands, resources: { gpu: 'T4' }, ...extra };
}

export interface JobPlan {
  offers: InstanceOfferWithAvailability[];
  /** Backends whose offers are missing from the plan, and why. */
  warnings: string[];
}

/** The plan of the run's first job. */
export async function planJob(
  harness: HarnessServer,
  configuration: Record<string, unknown>,
): Promise<JobPlan> {
  const answer = await harness.call<{ job_plans: JobPlan[] }>('/api/project/main/runs/get_plan', {
    run_spec: { configuration },
  });
  expect(answer.status).toBe(200);
  const jobPlan = answer.body.job_plans[0];
  if (!jobPlan) throw new Error('the plan has no job');
  return jobPlan;
}

/** Where the run's latest job ran. */
export function provisionedInstance(run: Run): {
  id: string;
  type: string;
  region: string;
  zone: string | null;
} {
  const data = run.latest_job_submission?.job_provisioning_data;
  if (!data) throw new Error(`run ${run.run_spec.run_name} has no provisioning data`);
  return {
    id: data.instance_id,
    type: data.instance_type.name,
    region: data.region,
    zone: data.availability_zone ?? null,
  };
}

/** Deletes fleet `name` and waits until the server no longer lists it. */
export async function deleteFleet(harness: HarnessServer, name: string): Promise<void> {
  const deleted = await harness.call('/api/project/main/fleets/delete', { names: [name] });
  expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
  await waitFor(
    `fleet ${name} to be gone`,
    async () => {
      const fleets = await harness.call<Array<{ name: string }>>('/api/project/main/fleets/list');
      return fleets.body.some((fleet) => fleet.name === name) ? null : true;
    },
    120_000,
  );
}

/**
 * Deletes every fleet of the project and waits until they are gone. For runs applied together: a
 * run that is placed after another ended takes that run's idle instance rather than a fleet of its
 * own, as in dstack, so which fleets exist depends on timing.
 */
export async function deleteAllFleets(harness: HarnessServer): Promise<void> {
  const fleets = await harness.call<Array<{ name: string }>>('/api/project/main/fleets/list');
  await Promise.all(fleets.body.map((fleet) => deleteFleet(harness, fleet.name)));
}
