import {
  type CatalogItem,
  type CollectOptions,
  createCatalogItem,
  findAccelerators,
  type OfflineCatalogProvider,
} from '@dstack/catalog';
import { NebiusApi, type NebiusPlatform, type NebiusPreset } from './nebius-api.js';
import { NEBIUS_BACKEND_TYPE } from './nebius-config.js';
import { listTenantProjects } from './nebius-projects.js';

/** gpuhunt's: GPU names from platform IDs that differ from dstack's names. */
const GPU_NAME_OVERRIDES: Readonly<Record<string, string>> = { rtx6000: 'rtxpro6000' };

/** gpuhunt's InfiniBand fabrics (Nebius's docs: fabric, platform, region). */
export const NEBIUS_INFINIBAND_FABRICS: ReadonlyArray<{ name: string; platform: string; region: string }> = [
  { name: 'fabric-2', platform: 'gpu-h100-sxm', region: 'eu-north1' },
  { name: 'fabric-3', platform: 'gpu-h100-sxm', region: 'eu-north1' },
  { name: 'fabric-4', platform: 'gpu-h100-sxm', region: 'eu-north1' },
  { name: 'fabric-5', platform: 'gpu-h200-sxm', region: 'eu-west1' },
  { name: 'fabric-6', platform: 'gpu-h100-sxm', region: 'eu-north1' },
  { name: 'fabric-7', platform: 'gpu-h200-sxm', region: 'eu-north1' },
  { name: 'eu-north2-a', platform: 'gpu-h200-sxm', region: 'eu-north2' },
  { name: 'me-west1-a', platform: 'gpu-b200-sxm-a', region: 'me-west1' },
  { name: 'uk-south1-a', platform: 'gpu-b300-sxm', region: 'uk-south1' },
  { name: 'us-central1-a', platform: 'gpu-h200-sxm', region: 'us-central1' },
  { name: 'us-central1-b', platform: 'gpu-b200-sxm', region: 'us-central1' },
];

/**
 * gpuhunt's `get_gpu_info`: the GPU of a `gpu-<name>-…` platform, when exactly one known NVIDIA
 * GPU has that name and the platform's GPU memory; else null.
 */
export function nebiusPlatformGpu(platform: NebiusPlatform): { name: string; memory: number } | null {
  const match = /^gpu-([^-]+)/.exec(platform.metadata.name);
  if (!match?.[1]) return null;
  const name = GPU_NAME_OVERRIDES[match[1]] ?? match[1];
  const found = findAccelerators({ names: [name], vendors: ['nvidia'] });
  if (found.length !== 1 || found[0]?.memory !== platform.spec.gpu_memory_gigabytes) return null;
  return { name: found[0].name, memory: found[0].memory };
}

export interface NebiusCatalogProviderSettings {
  /** Default: env `NEBIUS_SERVICE_ACCOUNT_ID`. */
  serviceAccountId?: string;
  /** Default: env `NEBIUS_PUBLIC_KEY_ID`. */
  publicKeyId?: string;
  /** The private key (PEM). Default: env `NEBIUS_PRIVATE_KEY_CONTENT`. */
  privateKey?: string;
  /** Default: env `DSTACK_NEBIUS_ENDPOINT_URL`, else Nebius's API. */
  endpointUrl?: string;
}

/**
 * Collects Nebius's offers into `nebius.csv` (offline, as gpuhunt classifies it), with gpuhunt's
 * semantics: one project per region of the tenancy; every platform's presets, on-demand and, where
 * the platform allows preemptibles, spot, each priced by the billing calculator's general hourly
 * total for that instance spec; instance name `<platform> <preset>`; GPUs from the platform ID
 * (presets whose GPUs cannot be named are skipped); `providerData.fabrics` the InfiniBand fabrics
 * of clusterable presets in that region; cheapest first.
 */
export class NebiusCatalogProvider implements OfflineCatalogProvider {
  readonly kind = 'offline';
  readonly name = NEBIUS_BACKEND_TYPE;
  readonly #settings: NebiusCatalogProviderSettings;

  constructor(settings: NebiusCatalogProviderSettings = {}) {
    this.#settings = settings;
  }

  async collect(options: CollectOptions = {}): Promise<CatalogItem[]> {
    const serviceAccountId = this.#settings.serviceAccountId ?? process.env.NEBIUS_SERVICE_ACCOUNT_ID;
    const publicKeyId = this.#settings.publicKeyId ?? process.env.NEBIUS_PUBLIC_KEY_ID;
    const privateKey = this.#settings.privateKey ?? process.env.NEBIUS_PRIVATE_KEY_CONTENT;
    if (!serviceAccountId || !publicKeyId || !privateKey) {
      throw new Error(
        'NEBIUS_SERVICE_ACCOUNT_ID, NEBIUS_PUBLIC_KEY_ID, NEBIUS_PRIVATE_KEY_CONTENT: set all three to collect the nebius catalog',
      );
    }
    const api = new NebiusApi({
      serviceAccountId,
      publicKeyId,
      privateKey,
      endpointUrl: this.#settings.endpointUrl ?? process.env.DSTACK_NEBIUS_ENDPOINT_URL,
    });
    try {
      const regionProject = new Map<string, string>();
      for (const project of await listTenantProjects(api)) {
        regionProject.set(project.status?.region || project.spec?.region || '', project.metadata.id);
      }
      const items: CatalogItem[] = [];
      for (const [region, projectId] of regionProject) {
        for (const platform of await api.listPlatforms(projectId)) {
          options.signal?.throwIfAborted();
          options.onProgress?.(`${region}/${platform.metadata.name}`);
          const gpu = nebiusPlatformGpu(platform);
          for (const preset of platform.spec.presets) {
            for (const spot of platform.status?.allowed_for_preemptibles ? [false, true] : [false]) {
              const price = await api.estimateHourlyCost({
                compute_instance_spec: {
                  metadata: { parent_id: projectId },
                  spec: {
                    resources: { platform: platform.metadata.name, preset: preset.name },
                    ...(spot ? { preemptible: {} } : {}),
                  },
                },
              });
              const item = nebiusCatalogItem(platform.metadata.name, preset, gpu, region, spot, price);
              if (item === null) {
                options.onProgress?.(
                  `skipped ${platform.metadata.name} ${preset.name}: its GPUs cannot be identified`,
                );
              } else items.push(item);
            }
          }
        }
      }
      return items.sort((a, b) => a.price - b.price);
    } finally {
      api.close();
    }
  }
}

function nebiusCatalogItem(
  platform: string,
  preset: NebiusPreset,
  gpu: { name: string; memory: number } | null,
  region: string,
  spot: boolean,
  price: number,
): CatalogItem | null {
  const fabrics = preset.allow_gpu_clustering
    ? NEBIUS_INFINIBAND_FABRICS.filter((each) => each.platform === platform && each.region === region).map(
        (each) => each.name,
      )
    : [];
  const gpuCount = preset.resources.gpu_count;
  if (gpuCount && gpu === null) return null;
  return createCatalogItem({
    provider: NEBIUS_BACKEND_TYPE,
    instanceName: `${platform} ${preset.name}`,
    location: region,
    price,
    cpu: preset.resources.vcpu_count,
    memory: preset.resources.memory_gibibytes,
    gpuCount: gpuCount || 0,
    gpuName: gpuCount ? (gpu?.name ?? null) : null,
    gpuMemory: gpuCount ? (gpu?.memory ?? null) : null,
    gpuVendor: gpuCount ? 'nvidia' : undefined,
    spot,
    diskSize: null,
    providerData: { fabrics },
  });
}

/** The provider the plugin descriptor carries (`catalogProvider`). */
export const nebiusCatalogProvider = new NebiusCatalogProvider();
