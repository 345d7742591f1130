/**
 * The EC2 calls of gpuhunt's AWS collector: DescribeInstanceTypes for the GPU name and memory
 * the price list lacks, and DescribeSpotPriceHistory for the current spot price of each type,
 * the cheapest over a region's zones. Regions a collecting account commonly has not enabled are
 * skipped when EC2 refuses them; any other failure ends the collection naming the region.
 */
import {
  EC2Client,
  type EC2ClientConfig,
  paginateDescribeInstanceTypes,
  paginateDescribeSpotPriceHistory,
} from '@aws-sdk/client-ec2';
import type { AcceleratorVendor } from '@dstack/catalog';
import { awsErrorCode } from './aws-clients.js';

/** Instance types per DescribeInstanceTypes call (EC2's limit). */
const DESCRIBE_INSTANCE_TYPES_LIMIT = 100;
/** Regions fetched at once for spot prices (gpuhunt: enough threads to cover every region). */
const SPOT_PRICE_CONCURRENCY = 32;

/** Regions whose endpoint may time out during an AWS disruption; a timeout there skips them. */
const TEMPORARILY_UNAVAILABLE_REGIONS: ReadonlySet<string> = new Set(['me-south-1']);

/** Opt-in regions a collecting account may not have enabled; AuthFailure there skips them. */
export const ACCOUNT_NOT_ENABLED_REGIONS: ReadonlySet<string> = new Set([
  'ap-southeast-5',
  'us-gov-west-1',
  'eu-south-1',
  'eu-south-2',
  'ap-southeast-3',
  'us-west-2-phx-1',
  'me-central-1',
  'il-central-1',
  'ap-southeast-4',
  'mx-central-1',
  'af-south-1',
  'ap-east-2',
  'us-gov-east-1',
  'ap-east-1',
  'ap-south-2',
  'ap-southeast-6',
  'eu-central-2',
  'ap-southeast-7',
  'ca-west-1',
  'me-south-1',
]);

/**
 * Whether a price-list location code is an EC2 API region (`us-east-1`, `us-gov-west-1`,
 * `cn-north-1`) rather than a Local Zone or Wavelength code (`us-west-2-lax-1`) EC2 has no
 * endpoint for. gpuhunt asks botocore's endpoint table; the shape of the code says the same.
 */
export function isEc2ApiRegion(location: string): boolean {
  return /^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d+$/.test(location);
}

/** GPU names EC2 spells differently from the catalog (gpuhunt's `GPU_NAME_MAPPING`). */
const GPU_NAME_MAPPING: Readonly<Record<string, string>> = {
  'RTX PRO 4500': 'RTXPRO4500',
  'RTX PRO Server 6000': 'RTXPRO6000',
};

/** `GpuInfo.Gpus[].Manufacturer` → the catalog's vendor. */
const MANUFACTURER_VENDORS: Readonly<Record<string, AcceleratorVendor>> = {
  NVIDIA: 'nvidia',
  AMD: 'amd',
  Habana: 'intel',
  Intel: 'intel',
};

export interface AwsGpuDetails {
  readonly name: string;
  /** GiB of one GPU. */
  readonly memory: number;
  readonly vendor: AcceleratorVendor;
}

/**
 * Types EC2 describes wrongly or not yet (gpuhunt's `preview_gpus`): p4de's 80 GB A100s.
 * They are never asked for.
 */
export const PREVIEW_GPUS: Readonly<Record<string, AwsGpuDetails>> = {
  'p4de.24xlarge': { name: 'A100', memory: 80, vendor: 'nvidia' },
};

/** L4 sizes EC2 is known to misreport (per 1, 4 and 8 GPUs); gpuhunt pins L4 to 24 GiB. */
const KNOWN_MISREPORTED_L4_MIB = new Set([22888, 91553, 183105]);

export interface Ec2CatalogClientSettings {
  /** Default: the SDK's own (AWS_ENDPOINT_URL_EC2, AWS_ENDPOINT_URL, shared config, AWS). */
  readonly endpoint?: string;
  /** Default: the SDK's default credential chain. */
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string };
  readonly onProgress?: (message: string) => void;
  readonly signal?: AbortSignal;
}

/**
 * One client per region, configured as gpuhunt's (5 s connect timeout, 2 attempts): a dead
 * regional endpoint costs seconds, not minutes of retries.
 */
function ec2Client(settings: Ec2CatalogClientSettings, region: string): EC2Client {
  const config: EC2ClientConfig = {
    region,
    maxAttempts: 2,
    requestHandler: { connectionTimeout: 5000 },
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    ...(settings.credentials ? { credentials: settings.credentials } : {}),
  };
  return new EC2Client(config);
}

const CONNECTION_ERROR_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH']);

/** Why a region may be skipped rather than failing the collection, or null when it may not. */
function skipReason(region: string, error: unknown): string | null {
  const code = awsErrorCode(error);
  const cause = (error as { code?: unknown; cause?: { code?: unknown } }) ?? {};
  const errno = typeof cause.code === 'string' ? cause.code : cause.cause?.code;
  if (code === 'TimeoutError' && TEMPORARILY_UNAVAILABLE_REGIONS.has(region)) {
    return 'temporary AWS regional disruption (connect timeout)';
  }
  if (ACCOUNT_NOT_ENABLED_REGIONS.has(region)) {
    if (code === 'AuthFailure') return 'the account is not enabled in this region (AuthFailure)';
    if (typeof errno === 'string' && CONNECTION_ERROR_CODES.has(errno)) {
      return `the account is not enabled in this region (${errno})`;
    }
  }
  return null;
}

function regionFailure(what: string, region: string, error: unknown): Error {
  return new Error(`failed AWS ${what} fetch in region ${region}: ${(error as Error).message}`, {
    cause: error,
  });
}

/**
 * GPU details of the given types, keyed by type: each type is described once, in the region
 * listing the most types still undescribed (batches of 100), as gpuhunt does. Types in
 * {@link PREVIEW_GPUS} come from that table. A type EC2 did not describe is absent.
 */
export async function fetchGpuDetails(
  typesByRegion: ReadonlyMap<string, readonly string[]>,
  settings: Ec2CatalogClientSettings,
): Promise<Map<string, AwsGpuDetails>> {
  const details = new Map<string, AwsGpuDetails>(Object.entries(PREVIEW_GPUS));
  let regions = new Map(
    [...typesByRegion].map(([region, types]) => [region, types.filter((type) => !(type in PREVIEW_GPUS))]),
  );
  regions = new Map([...regions].filter(([, types]) => types.length > 0));
  while (regions.size > 0) {
    const [region, types] = [...regions].reduce((busiest, each) =>
      each[1].length > busiest[1].length ? each : busiest,
    );
    regions.delete(region);
    const client = ec2Client(settings, region);
    try {
      for (let offset = 0; offset < types.length; offset += DESCRIBE_INSTANCE_TYPES_LIMIT) {
        settings.onProgress?.(`aws: fetching GPU details for ${region} (offset=${offset})`);
        const pages = paginateDescribeInstanceTypes(
          { client },
          { InstanceTypes: types.slice(offset, offset + DESCRIBE_INSTANCE_TYPES_LIMIT) as never[] },
        );
        for await (const page of pages) {
          settings.signal?.throwIfAborted();
          for (const type of page.InstanceTypes ?? []) {
            const gpu = type.GpuInfo?.Gpus?.[0];
            if (!type.InstanceType || !gpu?.Name) continue;
            const memoryMiB = gpu.MemoryInfo?.SizeInMiB ?? 0;
            if (gpu.Name === 'L4' && !KNOWN_MISREPORTED_L4_MIB.has(memoryMiB)) {
              settings.onProgress?.(
                `aws: warning: EC2 now reports ${memoryMiB} MiB for L4 (${type.InstanceType}); check whether the pinned 24 GiB is still needed`,
              );
            }
            details.set(type.InstanceType, {
              name: GPU_NAME_MAPPING[gpu.Name] ?? gpu.Name,
              // EC2 misreports L4 as 22888 MiB; other sizes are published as reported.
              memory: gpu.Name === 'L4' ? 24 : memoryMiB / 1024,
              // gpuhunt marks every AWS GPU NVIDIA; the manufacturer keeps AMD and Habana rows
              // right when the filter is off.
              vendor: MANUFACTURER_VENDORS[gpu.Manufacturer ?? ''] ?? 'nvidia',
            });
          }
        }
      }
    } catch (error) {
      const reason = skipReason(region, error);
      if (reason === null || settings.signal?.aborted) throw regionFailure('GPU details', region, error);
      settings.onProgress?.(`aws: skipping region ${region} for GPU details: ${reason}`);
      // As gpuhunt: the skipped region's types stay to be described elsewhere.
      continue;
    } finally {
      client.destroy();
    }
    const described = new Set(types);
    regions = new Map(
      [...regions]
        .map(([other, names]) => [other, names.filter((name) => !described.has(name))] as const)
        .filter(([, names]) => names.length > 0),
    );
  }
  return details;
}

/** The current Linux spot price of each type in one region: the cheapest over its zones. */
async function fetchRegionSpotPrices(
  region: string,
  types: readonly string[],
  settings: Ec2CatalogClientSettings,
): Promise<Map<string, number>> {
  settings.onProgress?.(`aws: fetching spot prices for ${region} (${types.length} instance types)`);
  const client = ec2Client(settings, region);
  const cheapest = new Map<string, number>();
  try {
    const pages = paginateDescribeSpotPriceHistory(
      { client },
      {
        Filters: [{ Name: 'product-description', Values: ['Linux/UNIX'] }],
        InstanceTypes: [...types] as never[],
        // With StartTime now, EC2 answers each zone's price in force now.
        StartTime: new Date(),
      },
    );
    for await (const page of pages) {
      settings.signal?.throwIfAborted();
      for (const entry of page.SpotPriceHistory ?? []) {
        const price = Number(entry.SpotPrice);
        if (!entry.InstanceType || Number.isNaN(price)) continue;
        cheapest.set(entry.InstanceType, Math.min(cheapest.get(entry.InstanceType) ?? price, price));
      }
    }
  } catch (error) {
    const reason = skipReason(region, error);
    if (reason === null || settings.signal?.aborted) throw regionFailure('spot price', region, error);
    settings.onProgress?.(`aws: skipping region ${region} for spot prices: ${reason}`);
    return new Map();
  } finally {
    client.destroy();
  }
  return cheapest;
}

/** Spot prices by region and type, the regions fetched {@link SPOT_PRICE_CONCURRENCY} at a time. */
export async function fetchSpotPrices(
  typesByRegion: ReadonlyMap<string, readonly string[]>,
  settings: Ec2CatalogClientSettings,
): Promise<Map<string, Map<string, number>>> {
  const pending = [...typesByRegion];
  const prices = new Map<string, Map<string, number>>();
  const worker = async () => {
    for (let next = pending.shift(); next; next = pending.shift()) {
      const [region, types] = next;
      prices.set(region, await fetchRegionSpotPrices(region, types, settings));
    }
  };
  await Promise.all(Array.from({ length: Math.min(SPOT_PRICE_CONCURRENCY, pending.length) }, worker));
  return prices;
}
