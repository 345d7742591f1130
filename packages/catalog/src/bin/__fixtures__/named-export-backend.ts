import { type CatalogItem, createCatalogItem } from '../../catalog-item.js';

/** Exports its provider by name (`catalogProvider`) instead of on a default descriptor. */
export const catalogProvider = {
  kind: 'offline' as const,
  name: 'named',
  async collect(): Promise<CatalogItem[]> {
    return [
      createCatalogItem({
        provider: 'named',
        instanceName: 'n.small',
        location: 'r1',
        price: 0.01,
        cpu: 1,
        memory: 0.5,
      }),
    ];
  },
};
