import { describe, expect, it } from 'vitest';
import { type CatalogItem, createCatalogItem } from './catalog-item.js';
import { CatalogSelection, mergeByPrice, type OrderedOffers, orderedOffersOf } from './selection.js';
import { ColumnarCatalog } from './store/columnar-catalog.js';

function offer(provider: string, price: number, instanceName = `${provider}-${price}`): CatalogItem {
  return createCatalogItem({ provider, instanceName, location: 'somewhere', price, cpu: 4, memory: 16 });
}

/** Counts the items built, to prove the selection builds only what is read. */
function countingOffers(items: readonly CatalogItem[]): { offers: OrderedOffers; built: () => number } {
  let built = 0;
  const inner = orderedOffersOf(items);
  return {
    offers: {
      ...inner,
      itemAt: (index) => {
        built++;
        return inner.itemAt(index);
      },
    },
    built: () => built,
  };
}

describe('CatalogSelection', () => {
  it('merges like heapq.merge: each list keeps its order, ties go to the earlier list', () => {
    const vultr = [offer('vultr', 1), offer('vultr', 3)];
    const vastai = [offer('vastai', 2), offer('vastai', 1)];
    expect(mergeByPrice([vultr, vastai]).map((item) => item.price)).toEqual([1, 2, 1, 3]);
    const tie = mergeByPrice([[offer('a', 1)], [offer('b', 1)]]);
    expect(tie.map((item) => item.provider)).toEqual(['a', 'b']);
  });

  it('builds only the offers that are read', () => {
    const many = countingOffers(Array.from({ length: 10_000 }, (_, index) => offer('big', index)));
    const few = countingOffers([offer('small', 2.5)]);
    const selection = new CatalogSelection([many.offers, few.offers]);
    expect(selection.length).toBe(10_001);
    const cheapest = selection.take(5);
    expect(cheapest.map((item) => item.price)).toEqual([0, 1, 2, 2.5, 3]);
    expect(many.built() + few.built()).toBe(5);
  });

  it('take() and toArray() agree with the columnar store queried directly', () => {
    const items = Array.from({ length: 500 }, (_, index) => ({
      ...offer('aws', (index * 7919) % 101),
      cpu: 1 + (index % 32),
    }));
    const catalog = ColumnarCatalog.fromItems('aws', items);
    const filter = { minCpu: 8 };
    const selection = new CatalogSelection([catalog.select(filter)]);
    expect(selection.toArray()).toEqual(catalog.query(filter));
    expect(selection.take(10)).toEqual(catalog.query(filter).slice(0, 10));
    expect(selection.take(0)).toEqual([]);
  });

  it('hands out fresh objects on every read', () => {
    const catalog = ColumnarCatalog.fromItems('aws', [offer('aws', 1)]);
    const selection = new CatalogSelection([catalog.select({})]);
    const [first] = selection.take(1);
    first!.instanceName = 'changed';
    expect(selection.take(1)[0]!.instanceName).not.toBe('changed');
  });
});
