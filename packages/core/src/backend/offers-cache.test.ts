import { describe, expect, it } from 'vitest';
import type { InstanceOfferWithAvailability } from '../models/instances.js';
import { RequirementsSchema } from '../models/requirements.js';
import { OffersCache } from './offers-cache.js';

const requirements = (gpus: number) =>
  RequirementsSchema.parse({
    resources: { cpu: { count: { min: 1 } }, memory: { min: null }, gpu: { count: { min: gpus } } },
  });
const offers = (label: string) => [{ region: label }] as unknown as InstanceOfferWithAvailability[];

describe('OffersCache', () => {
  it('asks once per requirements until the time to keep them has passed', async () => {
    let now = 0;
    const cache = new OffersCache({ ttlMs: 1000, now: () => now });
    const asked: string[] = [];
    const load = (label: string) => async () => {
      asked.push(label);
      return offers(label);
    };

    expect(await cache.get(requirements(1), load('a'))).toEqual(offers('a'));
    now = 999;
    expect(await cache.get(requirements(1), load('b'))).toEqual(offers('a'));
    expect(await cache.get(requirements(2), load('c'))).toEqual(offers('c'));
    now = 1000;
    expect(await cache.get(requirements(1), load('d'))).toEqual(offers('d'));
    expect(asked).toEqual(['a', 'c', 'd']);
  });

  it('keeps no failure: a search that failed is asked again', async () => {
    const cache = new OffersCache();
    await expect(
      cache.get(requirements(1), async () => {
        throw new Error('marketplace down');
      }),
    ).rejects.toThrow('marketplace down');
    expect(await cache.get(requirements(1), async () => offers('after'))).toEqual(offers('after'));
  });

  it('keeps the most recent requirements only, up to its size', async () => {
    const cache = new OffersCache({ maxEntries: 2 });
    for (const gpus of [1, 2, 3]) await cache.get(requirements(gpus), async () => offers(`first ${gpus}`));
    expect(await cache.get(requirements(3), async () => offers('again 3'))).toEqual(offers('first 3'));
    expect(await cache.get(requirements(1), async () => offers('again 1'))).toEqual(offers('again 1'));
  });
});
