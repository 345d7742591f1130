import { type CatalogItem, createCatalogItem } from '../../catalog-item.js';
import type { CollectOptions } from '../../providers/catalog-provider.js';

/** A backend-package lookalike: its default export is a descriptor carrying `catalogProvider`. */
const items: CatalogItem[] = [
  createCatalogItem({
    provider: 'fake',
    instanceName: 'fake.gpu-2',
    location: 'moon-1',
    price: 2.5,
    cpu: 16,
    memory: 64,
    gpuCount: 2,
    gpuName: 'L4',
    gpuMemory: 24,
    gpuVendor: 'nvidia',
  }),
  createCatalogItem({
    provider: 'fake',
    instanceName: 'fake.cpu-4',
    location: 'moon-1',
    price: 0.1,
    cpu: 4,
    memory: 16,
    spot: true,
    diskSize: 100,
    flags: ['fake-preview'],
    cpuArch: 'arm',
    providerData: { zone: 'moon-1a' },
  }),
];

export default {
  name: 'fake',
  catalogProvider: {
    kind: 'offline' as const,
    name: 'fake',
    async collect(options: CollectOptions = {}): Promise<CatalogItem[]> {
      options.onProgress?.('fake: collecting');
      // Like gpuhunt's filter(): the legacy row is collected but not published.
      const legacy = { ...(items[0] as CatalogItem), instanceName: 'fake.legacy', price: 9 };
      const collected = options.applyFilter === false ? [...items, legacy] : items;
      return [...collected].sort((a, b) => a.price - b.price);
    },
  },
};
