/**
 * The catalog gpuhunt publishes for the emulated RunPod: RunPod is an offline provider in
 * gpuhunt (its collector asks RunPod's GraphQL API ahead of time and the bucket serves
 * `runpod/{version}/catalog.zip`), so a server plans RunPod from that bucket, not from the API.
 * The emulator serves the same layout at `/_emulator/catalog` (the URL a server's
 * `catalog.url` names): the rows gpuhunt's collector makes of the emulator's stock, beside the
 * bundled snapshot's providers as they are, so the catalog is complete for every backend.
 *
 * The rows (gpuhunt's `RunpodProvider`): one per GPU type, GPU count up to the type's maximum
 * and location with stock (listed data centers at the Secure Cloud price, countries at the
 * Community Cloud price), on demand only; Instant Cluster rows (`runpod-cluster`, the whole
 * maximum of GPUs, `pod_counts` 2 to 8); CPU rows per listed data center for each size of the
 * flavor's ladder (`runpod-cpu`, the disk its largest allowed).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  bundledSource,
  type CatalogItem,
  createCatalogItem,
  formatCatalogCsv,
  publishCatalog,
} from '@dstack/catalog';
import { EmulatorHttpError, type EmulatorResponse, text } from '../../emulator/emulator-responses.js';
import type { EmulatorRoute } from '../../emulator/emulator-server.js';
import { isSecureCloudLocation, type RunpodEmulatorData } from './runpod-emulator-data.js';
import { type RunpodStock, stockStatus } from './runpod-stock.js';

/** gpuhunt's provider name. */
const PROVIDER = 'runpod';
/** gpuhunt leaves these locations out of what it publishes (`RunpodProvider.filter`). */
const UNPUBLISHED_LOCATIONS: ReadonlySet<string> = new Set(['AR']);

/** gpuhunt's `_cpu_size_ladder`: doubling from the minimum, and the maximum. */
export function cpuSizeLadder(minVcpu: number, maxVcpu: number): number[] {
  const sizes: number[] = [];
  for (let size = minVcpu; size <= maxVcpu; size *= 2) sizes.push(size);
  if (sizes.at(-1) !== maxVcpu) sizes.push(maxVcpu);
  return [...new Set(sizes)].sort((left, right) => left - right);
}

/** The rows gpuhunt's RunPod collector makes of what the emulator sells now. */
export function runpodCatalogItems(data: RunpodEmulatorData, stock: RunpodStock): CatalogItem[] {
  const items: CatalogItem[] = [];
  const listed = data.dataCenters.filter((center) => center.listed).map((center) => center.id);
  const countries = data.countryCodes.filter((code): code is string => code !== null);
  const maxCount = Math.max(...data.gpuTypes.map((gpuType) => gpuType.maxGpuCount));
  for (let count = 1; count <= maxCount; count++) {
    for (const location of [...listed, ...countries]) {
      for (const gpuType of data.gpuTypes) {
        const secure = isSecureCloudLocation(location);
        const price = secure ? gpuType.securePrice : gpuType.communityPrice;
        if (count > gpuType.maxGpuCount || !price) continue;
        if (stockStatus(stock.free(gpuType.id, location), count) === null) continue;
        items.push(
          createCatalogItem({
            provider: PROVIDER,
            instanceName: gpuType.id,
            location,
            price: count * price,
            cpu: gpuType.vcpuPerGpu * count,
            memory: gpuType.memoryGbPerGpu * count,
            gpuVendor: gpuType.manufacturer === 'AMD' ? 'amd' : 'nvidia',
            gpuCount: count,
            gpuName: gpuType.gpuhuntName,
            gpuMemory: gpuType.memoryInGb,
          }),
        );
      }
    }
  }
  for (const gpuType of data.gpuTypes) {
    if (!gpuType.cluster) continue;
    for (const location of gpuType.cluster.dataCenters) {
      items.push(
        createCatalogItem({
          provider: PROVIDER,
          instanceName: gpuType.id,
          location,
          price: gpuType.cluster.pricePerGpu * gpuType.maxGpuCount,
          cpu: gpuType.vcpuPerGpu * 8,
          memory: gpuType.memoryGbPerGpu * 8,
          gpuVendor: gpuType.manufacturer === 'AMD' ? 'amd' : 'nvidia',
          gpuCount: gpuType.maxGpuCount,
          gpuName: gpuType.gpuhuntName,
          gpuMemory: gpuType.memoryInGb,
          flags: ['runpod-cluster'],
          providerData: { pod_counts: [2, 3, 4, 5, 6, 7, 8] },
        }),
      );
    }
  }
  for (const location of listed) {
    for (const flavor of data.cpuFlavors) {
      const basePrice = flavor.securePriceByDataCenter[location];
      if (basePrice === undefined) continue;
      for (const vcpu of cpuSizeLadder(flavor.minVcpu, flavor.maxVcpu)) {
        const memory = vcpu * flavor.ramMultiplier;
        items.push(
          createCatalogItem({
            provider: PROVIDER,
            instanceName: `${flavor.id}-${vcpu}-${memory}`,
            location,
            price: (basePrice * vcpu) / flavor.minVcpu,
            cpu: vcpu,
            memory,
            diskSize: vcpu * flavor.diskLimitPerVcpu,
            flags: ['runpod-cpu'],
          }),
        );
      }
    }
  }
  return items
    .filter((item) => !UNPUBLISHED_LOCATIONS.has(item.location))
    .sort((left, right) => left.price - right.price);
}

/** The emulator's catalog bucket: published once at start into a temporary directory. */
export interface RunpodCatalogBucket {
  /** The routes under `/_emulator/catalog`. */
  readonly routes: EmulatorRoute[];
  /** Removes the directory. */
  close(): Promise<void>;
}

/** Publishes RunPod's rows and the bundled snapshot's providers in gpuhunt's v3 layout. */
export async function publishRunpodCatalogBucket(
  items: readonly CatalogItem[],
): Promise<RunpodCatalogBucket> {
  const directory = await mkdtemp(join(tmpdir(), 'dstack-runpod-catalog-'));
  await publishCatalog({ directory, provider: PROVIDER, csv: formatCatalogCsv(items) });
  const snapshot = bundledSource();
  for (const provider of await snapshot.listProviders()) {
    if (provider === PROVIDER) continue;
    const file = await snapshot.load(provider);
    if (file) await publishCatalog({ directory, provider, csv: file.text, version: file.version });
  }
  const serve = async (path: string): Promise<EmulatorResponse> => {
    const body = await readFile(join(directory, path)).catch(() => {
      throw new EmulatorHttpError(text('Not Found', 404));
    });
    return { status: 200, headers: { 'content-type': 'application/octet-stream' }, body };
  };
  return {
    routes: [
      {
        name: 'catalog.version',
        method: 'GET',
        path: '/_emulator/catalog/:provider/version',
        handle: (request) => serve(join(safeSegment(request.params.provider), 'version')),
      },
      {
        name: 'catalog.zip',
        method: 'GET',
        path: '/_emulator/catalog/:provider/:version/catalog.zip',
        handle: (request) =>
          serve(
            join(safeSegment(request.params.provider), safeSegment(request.params.version), 'catalog.zip'),
          ),
      },
    ],
    close: () => rm(directory, { recursive: true, force: true }),
  };
}

/** A path segment that stays inside the bucket. */
function safeSegment(segment: string | undefined): string {
  if (!segment || !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(segment)) {
    throw new EmulatorHttpError(text('Not Found', 404));
  }
  return segment;
}
