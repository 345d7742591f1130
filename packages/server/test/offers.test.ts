/**
 * `offers/list` (what `dstack offer` shows) end to end: a real server (SQLite, then Postgres) whose project
 * has the fake backend.
 */
import type { InstanceOfferWithAvailability } from '@dstack/core';
import { createFakeBackend, createFakeBackendPlugin, FAKE_BACKEND_VALID_API_KEY } from '@dstack/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyTask,
  describeEachDatabase,
  type HarnessServer,
  makeTempDir,
  startHarnessServer,
  waitFor,
} from './server-harness.js';

const OFFERS = '/api/project/main/offers/list';

interface OffersAnswer {
  offers: Array<{ price: number; instance: { resources: { gpus: unknown[] } } }>;
  total_offers: number;
}

describeEachDatabase('offers/list', (databaseUrl) => {
  const temp = makeTempDir('dstack-offers-');
  let harness: HarnessServer;

  beforeAll(async () => {
    harness = await startHarnessServer({
      databaseUrl: databaseUrl(),
      dir: temp.dir,
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
    await harness?.close();
    temp.remove();
  });

  const offers = (body: unknown) => harness.call<OffersAnswer>(OFFERS, body);

  it('lists the offers matching the requirements, cheapest first, up to max_offers', async () => {
    const all = await offers({ configuration: { type: 'task', spot_policy: 'auto' } });
    expect(all.status).toBe(200);
    const prices = all.body.offers.map((offer) => offer.price);
    expect(prices.length).toBeGreaterThan(2);
    expect(prices).toEqual([...prices].sort((a, b) => a - b));
    expect(all.body.total_offers).toBe(prices.length);

    const firstTwo = await offers({ configuration: { type: 'task', spot_policy: 'auto' }, max_offers: 2 });
    expect(firstTwo.body).toEqual({
      offers: all.body.offers.slice(0, 2),
      total_offers: prices.length,
      warnings: [],
    });

    const gpus = await offers({ configuration: { type: 'task', resources: { gpu: 1 } } });
    expect(gpus.body.offers.length).toBeGreaterThan(0);
    for (const offer of gpus.body.offers) expect(offer.instance.resources.gpus.length).toBeGreaterThan(0);
  });

  it('takes any run configuration: a provider task or a service gets the offers of its requirements', async () => {
    const resources = { gpu: 1 };
    const plain = await offers({ configuration: { type: 'task', resources } });
    const provider = await offers({
      configuration: { type: 'task', provider: './providers/curl.mjs', parameters: { url: 'x' }, resources },
    });
    expect(provider.status).toBe(200);
    expect(provider.body).toEqual(plain.body);
    const service = await offers({
      configuration: { type: 'service', port: 8000, commands: ['serve'], resources },
    });
    expect(service.body).toEqual(plain.body);
  });

  it('answers 400 naming the field for bad requirements', async () => {
    const bad = await offers({ configuration: { type: 'task', resources: { memory: 'lots' } } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('memory');
  });
});

describe('offers of several backends', () => {
  const temp = makeTempDir('dstack-offers-order-');
  const capacity = (prices: number[]) => ({
    regions: ['fake-region-1'],
    spot: 'on-demand' as const,
    instanceTypes: prices.map((price) => ({ name: `type-${price}`, cpus: 4, memoryGib: 16, price })),
  });
  // A catalog cloud answers cheapest first; the marketplace answers dearest first (its own score order).
  const cloud = createFakeBackend({ capacity: capacity([0.5, 1]) });
  const market = createFakeBackend({
    type: 'market',
    capacity: capacity([0.1, 0.3, 2]),
    offerOrder: 'price-descending',
  });
  let harness: HarnessServer;

  beforeAll(async () => {
    const creds = { type: 'api_key', api_key: FAKE_BACKEND_VALID_API_KEY };
    harness = await startHarnessServer({
      dir: temp.dir,
      plugins: [cloud.plugin, market.plugin],
      config: {
        projects: [
          {
            name: 'main',
            backends: [
              { type: 'fake', creds },
              { type: 'market', creds },
            ],
          },
        ],
      },
    });
  });
  afterAll(async () => {
    await harness?.close();
    temp.remove();
  });

  it('sorts the plan by price across backends and launches the cheapest first', async () => {
    const configuration = { type: 'task', name: 'cheapest', commands: ['true'] };
    const plan = await harness.call<{ job_plans: Array<{ offers: InstanceOfferWithAvailability[] }> }>(
      '/api/project/main/runs/get_plan',
      { run_spec: { configuration } },
    );
    expect(plan.status).toBe(200);
    const offers = plan.body.job_plans[0]?.offers ?? [];
    expect(offers.map((offer) => `${offer.backend}:${offer.price}`)).toEqual([
      'market:0.1',
      'market:0.3',
      'fake:0.5',
      'fake:1',
      'market:2',
    ]);

    await applyTask(harness, configuration);
    const [launched] = await waitFor('the first launch', () => {
      const instances = [...market.instances.values(), ...cloud.instances.values()];
      return instances.length > 0 ? instances : null;
    });
    expect(`${launched?.offer.backend}:${launched?.offer.instance.name}:${launched?.offer.price}`).toBe(
      'market:type-0.1:0.1',
    );
    await harness.call('/api/project/main/runs/stop', { runs_names: ['cheapest'], abort: true });
  });
});
