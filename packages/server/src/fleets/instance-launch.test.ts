/**
 * What a launch that fails on its offers records, by the kind of failure: capacity moves on to
 * the next offer and ends `no_offers`; a refused key gives up on the backend at once and ends
 * `error` saying so; throttling is tried again on the same offer, then gives up on the backend.
 * The fake backend's offers, with a launch function that fails as the test says.
 */
import {
  BackendAuthenticationError,
  BackendRateLimitError,
  type JobProvisioningData,
  NoCapacityError,
} from '@dstack/core';
import type { FakeBackend } from '@dstack/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type BackendOffer, getOffers } from '../backends/offers.js';
import {
  createFakeBackendPipelineHarness,
  type PipelineHarness,
} from '../testing/pipeline-harness.test.helpers.js';
import { fleetRequirementsOf } from './fleet-provisioning.js';
import { createRunFleet } from './fleets.js';
import { insertPendingInstance, type LaunchResult, launchOnFirstOffer } from './instance-launch.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let harness: PipelineHarness<FakeBackend> | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** A pending row and the backend's offers for it (more than one). */
async function pendingLaunch() {
  const h = await createFakeBackendPipelineHarness({ capacity: { spot: 'on-demand' } });
  harness = h;
  const fleet = await createRunFleet(h.app, h.project.id, 'launches');
  const requirements = fleetRequirementsOf({});
  const instance = await insertPendingInstance(h.app, {
    projectId: h.project.id,
    fleet,
    requirements,
    terminationIdleTime: null,
    busyBlocks: 0,
  });
  const { offers } = await getOffers(await h.app.backends.getProjectBackends(h.project.id), requirements);
  expect(offers.length).toBeGreaterThan(1);
  const row = () =>
    h.app.db.selectFrom('instances').selectAll().where('id', '=', instance.id).executeTakeFirstOrThrow();
  return { h, instance, offers, row };
}

/** A launch that throws `failures` one call after the other, then launches for real. */
function failingLaunch(h: PipelineHarness<FakeBackend>, failures: Error[]) {
  const tried: string[] = [];
  const launch = async (entry: BackendOffer): Promise<JobProvisioningData> => {
    tried.push(entry.offer.instance.name);
    const failure = failures.shift();
    if (failure) throw failure;
    return { ...provisioningDataOf(entry), instance_id: `i-${tried.length}` };
  };
  return { tried, launch, h };
}

function provisioningDataOf(entry: BackendOffer): JobProvisioningData {
  return {
    backend: entry.backend.type,
    instance_type: entry.offer.instance,
    instance_id: 'i-0',
    hostname: null,
    region: entry.offer.region,
    price: entry.offer.price,
    username: 'root',
    dockerized: true,
  } as JobProvisioningData;
}

function failuresOf(result: LaunchResult) {
  if (result.launched) throw new Error('the launch succeeded');
  return result.failures.map((failure) => failure.kind);
}

const NO_WAIT = [0, 0, 0];

describe('launchOnFirstOffer', () => {
  it('moves on past offers without capacity, and ends no_offers when none had any', async () => {
    const { h, instance, offers, row } = await pendingLaunch();
    const { tried, launch } = failingLaunch(
      h,
      offers.map(() => new NoCapacityError('sold out')),
    );
    const result = await launchOnFirstOffer(h.app, instance, offers, launch, undefined, NO_WAIT);
    expect(tried).toHaveLength(offers.length);
    expect(new Set(failuresOf(result))).toEqual(new Set(['no-capacity']));
    const ended = await row();
    expect(ended).toMatchObject({ status: 'terminated', termination_reason: 'no_offers' });
    expect(ended.termination_reason_message).toMatch(/^every offer failed: fake\/.*sold out/);
  });

  it('gives up on a backend that refused its key at once, ending error with a message that says so', async () => {
    const { h, instance, offers, row } = await pendingLaunch();
    const { tried, launch } = failingLaunch(h, [
      new BackendAuthenticationError(
        'AuthFailure: AWS was not able to validate the provided access credentials',
      ),
    ]);
    const result = await launchOnFirstOffer(h.app, instance, offers, launch, undefined, NO_WAIT);
    // Every offer is the same backend's: none is tried after the refusal.
    expect(tried).toHaveLength(1);
    expect(failuresOf(result)).toEqual(['authentication']);
    expect(await row()).toMatchObject({
      status: 'terminated',
      termination_reason: 'error',
      termination_reason_message:
        'backend fake: authentication failed: AuthFailure: AWS was not able to validate the provided access credentials',
    });
  });

  it('tries a throttled launch again on the same offer, and launches once the throttling passes', async () => {
    const { h, instance, offers, row } = await pendingLaunch();
    const { tried, launch } = failingLaunch(h, [
      new BackendRateLimitError('RequestLimitExceeded'),
      new BackendRateLimitError('RequestLimitExceeded'),
    ]);
    const result = await launchOnFirstOffer(h.app, instance, offers, launch, undefined, NO_WAIT);
    expect(result.launched).toBe(true);
    expect(tried).toEqual([
      offers[0]?.offer.instance.name,
      offers[0]?.offer.instance.name,
      offers[0]?.offer.instance.name,
    ]);
    expect((await row()).status).toBe('provisioning');
  });

  it('gives up on a backend that keeps throttling after its retries, ending error (rate limited)', async () => {
    const { h, instance, offers, row } = await pendingLaunch();
    const { tried, launch } = failingLaunch(
      h,
      Array.from(
        { length: 10 },
        () => new BackendRateLimitError('RequestLimitExceeded: Request limit exceeded.'),
      ),
    );
    const result = await launchOnFirstOffer(h.app, instance, offers, launch, undefined, NO_WAIT);
    expect(tried).toHaveLength(1 + NO_WAIT.length);
    expect(failuresOf(result)).toEqual(['rate-limit']);
    expect(await row()).toMatchObject({
      status: 'terminated',
      termination_reason: 'error',
      termination_reason_message: 'backend fake: rate limited: RequestLimitExceeded: Request limit exceeded.',
    });
  });
});
