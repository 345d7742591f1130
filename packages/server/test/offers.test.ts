/**
 * `offers/list` (what `dstack offer` shows) end to end: a real server (SQLite, then Postgres) whose project
 * has the fake backend.
 */
import { createFakeBackendPlugin, FAKE_BACKEND_VALID_API_KEY } from '@dstack/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  describeEachDatabase,
  type HarnessServer,
  makeTempDir,
  startHarnessServer,
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
