import {
  type CatalogItem,
  type CollectOptions,
  createCatalogItem,
  filterGcpOffers,
  type OfflineCatalogProvider,
  pythonRound,
} from '@dstack/catalog';
import type { Dispatcher } from 'undici';
import { GCP_ACCELERATOR_DETAILS } from './gcp-accelerators.js';
import {
  accessTokenSource,
  createServiceAccountClient,
  type GcpServiceAccountKey,
  GOOGLE_APPLICATION_CREDENTIALS_ENV,
  readServiceAccountKeyFile,
} from './gcp-auth.js';
import {
  type GcpComputeListSettings,
  type GcpMachineType,
  listMachineTypes,
  listN1GpuVariants,
  listZones,
} from './gcp-collector-machine-types.js';
import {
  GCP_CAPACITY_TYPES,
  type GcpCapacityType,
  GcpPrices,
  listComputeEngineSkus,
} from './gcp-collector-prices.js';
import { GCP_BACKEND_TYPE, GCP_COMPUTE_URL } from './gcp-config.js';

/** Environment variable: Compute Engine's base URL (an emulator's), instead of Google's. */
export const GCP_COMPUTE_URL_ENV = 'DSTACK_GCP_COMPUTE_URL';
/** Environment variable: the Cloud Billing API's base URL (an emulator's), instead of Google's. */
export const GCP_BILLING_URL_ENV = 'DSTACK_GCP_BILLING_URL';
/** Environment variable (gpuhunt's): the project whose machine types are listed. */
export const GCP_PROJECT_ID_ENV = 'GCP_PROJECT_ID';

export const DEFAULT_GCP_BILLING_URL = 'https://cloudbilling.googleapis.com';

export interface GcpCatalogProviderOptions {
  /** Compute Engine v1 base URL. Default: `$DSTACK_GCP_COMPUTE_URL`, else `https://compute.googleapis.com/compute/v1`. */
  computeUrl?: string;
  /** Cloud Billing base URL. Default: `$DSTACK_GCP_BILLING_URL`, else `https://cloudbilling.googleapis.com`. */
  billingUrl?: string;
  /**
   * The service account: its parsed key, or the path of its key file. Default: the key file at
   * `$GOOGLE_APPLICATION_CREDENTIALS`. The token exchange goes to the key's `token_uri`.
   */
  credentials?: GcpServiceAccountKey | string;
  /** The project whose zones and machine types are listed. Default: `$GCP_PROJECT_ID`, else the key's `project_id`. */
  project?: string;
  /** undici dispatcher for the Compute and Billing calls. Default: undici's global one. */
  dispatcher?: Dispatcher;
  /** Backoff before retrying a throttled or failed call, doubled per retry (4 at most). Default 1000 ms. */
  retryBaseDelayMs?: number;
}

/**
 * Collects the gcp offers ahead of time into the catalog file `gcp.csv` (an offline provider:
 * prices and machine types change rarely), the way gpuhunt's `GCPProvider` does:
 *
 * 1. Compute `regions.list` → zones; per zone `machineTypes.list` (deprecated types skipped,
 *    built-in GPUs named by `accelerators[0]`); the location of an offer is the zone;
 * 2. per zone with n1 types, `acceleratorTypes.list`: every n1 type within gpuhunt's limits gets
 *    a variant per attachable GPU (K80, P100, P4, T4, V100) and count;
 * 3. the Billing Catalog's Compute Engine SKUs: per region and capacity (on-demand, spot, DWS
 *    calendar mode), price per vCPU and GiB of each family, per GPU, per B200 slice, per GiB of
 *    local SSD; a machine type gets one offer per capacity it has every price part for;
 * 4. flags (`gcp-dws-calendar-mode`, `gcp-a4`, `gcp-g4` plus a `gcp-g4-preview` copy); every
 *    offer sorted by price (ties keep their order);
 * 5. with `applyFilter` (default), gpuhunt's `filter()`: the published families and GPUs.
 *
 * TPU offers (gpuhunt's `tpu_v2` listing and TPU SKUs) are not collected yet.
 * `dstack-catalog collect gcp --output gcp.csv` runs it.
 */
export class GcpCatalogProvider implements OfflineCatalogProvider {
  readonly kind = 'offline';
  readonly name = GCP_BACKEND_TYPE;
  readonly #options: GcpCatalogProviderOptions;

  constructor(options: GcpCatalogProviderOptions = {}) {
    this.#options = options;
  }

  async collect(options: CollectOptions = {}): Promise<CatalogItem[]> {
    const { signal, onProgress } = options;
    const key = await this.#serviceAccountKey();
    const token = accessTokenSource(createServiceAccountClient(key));
    const compute: GcpComputeListSettings = {
      computeUrl: this.#options.computeUrl ?? (process.env[GCP_COMPUTE_URL_ENV] || GCP_COMPUTE_URL),
      project: this.#projectOf(key),
      token,
      dispatcher: this.#options.dispatcher,
      retryBaseDelayMs: this.#options.retryBaseDelayMs,
      signal,
      onProgress,
    };

    const zones = await listZones(compute);
    onProgress?.(`gcp: ${zones.length} zones in project ${compute.project}`);
    const machineTypes = await listMachineTypes(zones, compute);
    const variants = await listN1GpuVariants(machineTypes, compute);
    onProgress?.(`gcp: ${machineTypes.length} machine types, ${variants.length} n1 + GPU variants`);

    const skus = await listComputeEngineSkus({
      billingUrl: this.#options.billingUrl ?? (process.env[GCP_BILLING_URL_ENV] || DEFAULT_GCP_BILLING_URL),
      token,
      dispatcher: this.#options.dispatcher,
      retryBaseDelayMs: this.#options.retryBaseDelayMs,
      signal,
    });
    onProgress?.(`gcp: ${skus.length} Compute Engine SKUs`);
    const prices = GcpPrices.fromSkus(skus, 'services.skus.list skus');

    const offers = withLegacyG4Preview(
      [...machineTypes, ...variants].flatMap((machineType) => offersOf(machineType, prices)),
    );
    // Array.prototype.sort is stable, like Python's sorted(): equal prices keep their order.
    offers.sort((a, b) => a.price - b.price);
    if (!(options.applyFilter ?? true)) return offers;
    const kept = filterGcpOffers(offers);
    onProgress?.(`gcp: filtered out ${offers.length - kept.length} of ${offers.length} offers`);
    return kept;
  }

  #projectOf(key: GcpServiceAccountKey): string {
    const project = this.#options.project ?? (process.env[GCP_PROJECT_ID_ENV] || key.project_id);
    if (!project) {
      throw new Error(
        `gcp: no project: set ${GCP_PROJECT_ID_ENV}, or use a service-account key file with a project_id`,
      );
    }
    return project;
  }

  async #serviceAccountKey(): Promise<GcpServiceAccountKey> {
    const credentials = this.#options.credentials ?? process.env[GOOGLE_APPLICATION_CREDENTIALS_ENV];
    if (!credentials) {
      throw new Error(
        `gcp: no service account: set ${GOOGLE_APPLICATION_CREDENTIALS_ENV} to the path of a service-account key file`,
      );
    }
    return typeof credentials === 'string' ? readServiceAccountKeyFile(credentials) : credentials;
  }
}

/** One offer per capacity `prices` has every part of, rounded to 6 places as gpuhunt does. */
function offersOf(machineType: GcpMachineType, prices: GcpPrices): CatalogItem[] {
  const accelerator = machineType.acceleratorType;
  const gpu = accelerator === null ? undefined : GCP_ACCELERATOR_DETAILS[accelerator];
  return GCP_CAPACITY_TYPES.flatMap((capacity: GcpCapacityType) => {
    const price = prices.instancePrice(machineType, capacity);
    if (price === null) return [];
    const dwsCalendarMode = capacity === 'dws-calendar-mode';
    return [
      createCatalogItem({
        provider: GCP_BACKEND_TYPE,
        instanceName: machineType.instanceName,
        location: machineType.zone,
        price: pythonRound(price, 6),
        cpu: machineType.cpu,
        memory: machineType.memory,
        ...(gpu
          ? {
              gpuCount: machineType.gpuCount,
              gpuName: gpu.name,
              gpuMemory: gpu.memory,
              gpuVendor: accelerator?.startsWith('nvidia-') ? 'nvidia' : null,
            }
          : {}),
        spot: capacity === 'spot',
        flags: flagsOf(machineType.instanceName, dwsCalendarMode),
        providerData: { is_dws_calendar_mode: dwsCalendarMode },
      }),
    ];
  });
}

/** gpuhunt's `_set_flags`: what dstack needs to know before offering these machines. */
function flagsOf(instanceName: string, dwsCalendarMode: boolean): string[] {
  const flags: string[] = [];
  if (dwsCalendarMode) flags.push('gcp-dws-calendar-mode');
  if (instanceName.startsWith('a4-')) flags.push('gcp-a4');
  else if (instanceName.startsWith('g4-standard-')) flags.push('gcp-g4');
  return flags;
}

/** gpuhunt's `_with_legacy_g4_preview`: each g4 offer again, flagged as dstack 0.19.33 expects. */
function withLegacyG4Preview(offers: CatalogItem[]): CatalogItem[] {
  return offers.flatMap((offer) =>
    offer.instanceName.startsWith('g4-standard-')
      ? [
          offer,
          {
            ...offer,
            flags: [...offer.flags.filter((flag) => flag !== 'gcp-g4'), 'gcp-g4-preview'],
            providerData: { ...offer.providerData },
          },
        ]
      : [offer],
  );
}

/**
 * The provider the plugin descriptor carries (`catalogProvider`): its settings come from the
 * environment at each collection (`GOOGLE_APPLICATION_CREDENTIALS`, `GCP_PROJECT_ID`,
 * `DSTACK_GCP_COMPUTE_URL`, `DSTACK_GCP_BILLING_URL`).
 */
export const gcpCatalogProvider = new GcpCatalogProvider();
