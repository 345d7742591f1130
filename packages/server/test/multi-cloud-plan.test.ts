/**
 * One project with AWS, GCP and Vast.ai configured, each backend pointed at its emulator (the real
 * AWS SDK, google-auth-library + Compute REST, the Vast.ai REST API against them): the plan sorts
 * the clouds' offers by price, and the run is launched on the cheapest, in its cloud, while the
 * others launch nothing. The emulators make up the instances' addresses (no hosts), so the run is
 * stopped once it has its machine.
 */

import type { InstanceOfferWithAvailability, Run } from '@dstack/core';
import {
  type AwsEmulator,
  awsEmulatorBackend,
  type GcpEmulator,
  gcpEmulatorBackend,
  startAwsEmulator,
  startGcpEmulator,
  startVastaiEmulator,
  type VastaiEmulator,
  vastaiEmulatorBackend,
} from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyTask, type HarnessServer, makeTempDir, startHarnessServer, waitFor } from './server-harness.js';

describe('a project with AWS, GCP and Vast.ai', () => {
  let aws: AwsEmulator;
  let gcp: GcpEmulator;
  let vastai: VastaiEmulator;
  let harness: HarnessServer;
  const temp = makeTempDir();

  beforeAll(async () => {
    aws = await startAwsEmulator({ regions: ['us-east-1'] });
    gcp = await startGcpEmulator({ regions: ['us-central1'] });
    vastai = await startVastaiEmulator();
    const backends = [awsEmulatorBackend(aws), gcpEmulatorBackend(gcp), vastaiEmulatorBackend(vastai)];
    harness = await startHarnessServer({ dir: temp.dir, config: { projects: [{ name: 'main', backends }] } });
  }, 120_000);

  afterAll(async () => {
    await harness?.terminateFleetsAndClose();
    await aws?.close();
    await gcp?.close();
    await vastai?.close();
    temp.remove();
  }, 120_000);

  it('plans the three clouds as one list sorted by price', async () => {
    const configuration = {
      type: 'task',
      name: 'three-clouds',
      commands: ['true'],
      resources: { gpu: 'A100' },
    };
    const plan = await harness.call<{ job_plans: Array<{ offers: InstanceOfferWithAvailability[] }> }>(
      '/api/project/main/runs/get_plan',
      { run_spec: { configuration } },
    );
    expect(plan.status).toBe(200);
    const offers = plan.body.job_plans[0]?.offers ?? [];
    expect(new Set(offers.map((offer) => offer.backend))).toEqual(new Set(['aws', 'gcp', 'vastai']));
    // One list sorted by price, though Vast.ai answers in its marketplace's score order (gpuhunt's
    // `heapq.merge` would leave its cheap offers behind every dearer offer of the catalog clouds).
    const prices = offers.map((offer) => offer.price);
    expect(prices).toEqual([...prices].sort((a, b) => a - b));
    expect(vastai.launchedMachineCount()).toBe(0);
  }, 120_000);

  it('plans both VM clouds merged by price and launches on the cheaper one', async () => {
    const configuration = { type: 'task', name: 'two-clouds', commands: ['true'], resources: { gpu: 'T4' } };
    const plan = await harness.call<{ job_plans: Array<{ offers: InstanceOfferWithAvailability[] }> }>(
      '/api/project/main/runs/get_plan',
      { run_spec: { configuration } },
    );
    expect(plan.status).toBe(200);
    const offers = plan.body.job_plans[0]?.offers ?? [];
    expect(new Set(offers.map((offer) => offer.backend))).toEqual(new Set(['aws', 'gcp']));
    const prices = offers.map((offer) => offer.price);
    expect(prices).toEqual([...prices].sort((a, b) => a - b));
    const [cheapest] = offers;
    if (!cheapest) throw new Error('no offers');

    await applyTask(harness, configuration);
    const launched = await waitFor(
      'the job to get its machine',
      async () => {
        const run = (await harness.call<Run>('/api/project/main/runs/get', { run_name: 'two-clouds' })).body;
        return run.latest_job_submission?.job_provisioning_data ?? null;
      },
      120_000,
    );
    expect({ backend: launched.backend, type: launched.instance_type.name, region: launched.region }).toEqual(
      {
        backend: cheapest.backend,
        type: cheapest.instance.name,
        region: cheapest.region,
      },
    );
    const machines = { aws: aws.state().instances.length, gcp: gcp.launchedMachineCount() };
    expect(machines).toEqual(cheapest.backend === 'aws' ? { aws: 1, gcp: 0 } : { aws: 0, gcp: 1 });

    await harness.call('/api/project/main/runs/stop', { runs_names: ['two-clouds'], abort: true });
  }, 180_000);
});
