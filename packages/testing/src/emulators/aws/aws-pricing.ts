/**
 * The AWS price list for EC2, in the two forms a collector reads: Pricing GetProducts (JSON 1.1,
 * `AWSPriceListService.GetProducts`, each item a JSON-encoded string) and the bulk CSV
 * (`/offers/v1.0/aws/AmazonEC2/current/index.csv`, five disclaimer lines then a header), which
 * gpuhunt's AWS collector reads. Both are built from the emulator's offerings; the bulk CSV also
 * carries the rows a collector must drop (Windows, Dedicated, unused reservations).
 */
import { createHash } from 'node:crypto';
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import type { AwsEmulatorData, AwsInstanceTypeSpec } from './aws-emulator-data.js';
import { decodePageToken, encodePageToken } from './aws-query-params.js';
import { awsJsonError, awsJsonResponse } from './aws-xml.js';

export const PRICING_TARGET_PREFIX = 'AWSPriceListService.';
export const BULK_PRICE_LIST_PATH = '/offers/v1.0/aws/AmazonEC2/current/index.csv';

/** The price list's names of regions. */
const LOCATION_NAMES: Readonly<Record<string, string>> = {
  'af-south-1': 'Africa (Cape Town)',
  'ap-east-1': 'Asia Pacific (Hong Kong)',
  'ap-northeast-1': 'Asia Pacific (Tokyo)',
  'ap-northeast-2': 'Asia Pacific (Seoul)',
  'ap-northeast-3': 'Asia Pacific (Osaka)',
  'ap-south-1': 'Asia Pacific (Mumbai)',
  'ap-southeast-1': 'Asia Pacific (Singapore)',
  'ap-southeast-2': 'Asia Pacific (Sydney)',
  'ap-southeast-3': 'Asia Pacific (Jakarta)',
  'ca-central-1': 'Canada (Central)',
  'eu-central-1': 'EU (Frankfurt)',
  'eu-north-1': 'EU (Stockholm)',
  'eu-south-1': 'EU (Milan)',
  'eu-west-1': 'EU (Ireland)',
  'eu-west-2': 'EU (London)',
  'eu-west-3': 'EU (Paris)',
  'me-central-1': 'Middle East (UAE)',
  'me-south-1': 'Middle East (Bahrain)',
  'us-east-1': 'US East (N. Virginia)',
  'us-east-2': 'US East (Ohio)',
  'us-west-1': 'US West (N. California)',
  'us-west-2': 'US West (Oregon)',
};

/** EC2's on-demand term code and its hourly rate code, the same for every SKU. */
const ON_DEMAND_TERM = 'JRTCKXETXF';
const HOURLY_RATE = '6YS6EN2CT7';

/** One priced product: an instance type in a region with a given OS, tenancy and capacity status. */
interface PriceListProduct {
  readonly sku: string;
  readonly spec: AwsInstanceTypeSpec;
  readonly region: string;
  readonly operatingSystem: 'Linux' | 'Windows';
  readonly tenancy: 'Shared' | 'Dedicated';
  readonly capacityStatus: 'Used' | 'UnusedCapacityReservation';
  readonly price: number;
}

function skuOf(...parts: string[]): string {
  return createHash('sha256').update(parts.join('/')).digest('hex').slice(0, 16).toUpperCase();
}

/** The Linux/Shared/Used product of each (type, region) priced in the data, plus the variants a collector must drop. */
function priceListProducts(data: AwsEmulatorData, withVariants: boolean): PriceListProduct[] {
  const seen = new Set<string>();
  const products: PriceListProduct[] = [];
  for (const offering of data.offerings) {
    const key = `${offering.instanceType} ${offering.region}`;
    const spec = data.instanceTypes.get(offering.instanceType);
    if (seen.has(key) || offering.onDemandPrice === undefined || !spec) continue;
    seen.add(key);
    const base = { spec, region: offering.region, price: offering.onDemandPrice };
    const variants: Omit<PriceListProduct, 'sku' | 'spec' | 'region' | 'price'>[] = [
      { operatingSystem: 'Linux', tenancy: 'Shared', capacityStatus: 'Used' },
    ];
    if (withVariants) {
      variants.push(
        { operatingSystem: 'Windows', tenancy: 'Shared', capacityStatus: 'Used' },
        { operatingSystem: 'Linux', tenancy: 'Dedicated', capacityStatus: 'Used' },
        { operatingSystem: 'Linux', tenancy: 'Shared', capacityStatus: 'UnusedCapacityReservation' },
      );
    }
    for (const variant of variants) {
      const surcharge =
        (variant.operatingSystem === 'Windows' ? spec.vcpus * 0.046 : 0) +
        (variant.tenancy === 'Dedicated' ? 0.1 : 0);
      products.push({
        ...base,
        ...variant,
        price: Number(
          (base.price * (1 + (variant.tenancy === 'Dedicated' ? 0.1 : 0)) + surcharge).toFixed(4),
        ),
        sku: skuOf(
          offering.instanceType,
          offering.region,
          variant.operatingSystem,
          variant.tenancy,
          variant.capacityStatus,
        ),
      });
    }
  }
  return products;
}

function attributesOf(product: PriceListProduct): Record<string, string> {
  const { spec } = product;
  return {
    instanceType: spec.name,
    instanceFamily: spec.gpu ? 'GPU instance' : 'General purpose',
    vcpu: String(spec.vcpus),
    memory: `${Number((spec.memoryMiB / 1024).toFixed(2))} GiB`,
    gpu: spec.gpu ? String(spec.gpu.count) : '',
    gpuMemory: spec.gpu ? `${Math.round((spec.gpu.count * spec.gpu.memoryMiB) / 1024)} GiB` : 'NA',
    regionCode: product.region,
    location: LOCATION_NAMES[product.region] ?? product.region,
    locationType: 'AWS Region',
    operatingSystem: product.operatingSystem,
    tenancy: product.tenancy,
    capacitystatus: product.capacityStatus,
    preInstalledSw: 'NA',
    licenseModel: 'No License required',
    marketoption: 'OnDemand',
    currentGeneration: 'Yes',
    processorArchitecture: '64-bit',
    usagetype: `${product.tenancy === 'Dedicated' ? 'DedicatedUsage' : 'BoxUsage'}:${spec.name}`,
    operation: product.operatingSystem === 'Windows' ? 'RunInstances:0002' : 'RunInstances',
    servicecode: 'AmazonEC2',
    servicename: 'Amazon Elastic Compute Cloud',
  };
}

/** One GetProducts item, decoded: `{product, serviceCode, terms, version, publicationDate}`. */
function priceListItem(product: PriceListProduct, publicationDate: string): Record<string, unknown> {
  const term = `${product.sku}.${ON_DEMAND_TERM}`;
  return {
    product: { productFamily: 'Compute Instance', attributes: attributesOf(product), sku: product.sku },
    serviceCode: 'AmazonEC2',
    terms: {
      OnDemand: {
        [term]: {
          priceDimensions: {
            [`${term}.${HOURLY_RATE}`]: {
              unit: 'Hrs',
              endRange: 'Inf',
              description: `$${product.price.toFixed(4)} per On Demand ${product.operatingSystem} ${product.spec.name} Instance Hour`,
              appliesTo: [],
              rateCode: `${term}.${HOURLY_RATE}`,
              beginRange: '0',
              pricePerUnit: { USD: product.price.toFixed(10) },
            },
          },
          sku: product.sku,
          effectiveDate: publicationDate,
          offerTermCode: ON_DEMAND_TERM,
          termAttributes: {},
        },
      },
    },
    version: '20251120000000',
    publicationDate,
  };
}

interface PricingFilter {
  readonly Type: string;
  readonly Field: string;
  readonly Value: string;
}

function matchesPricingFilter(attributes: Record<string, string>, filter: PricingFilter): boolean {
  const value =
    filter.Field === 'ServiceCode'
      ? 'AmazonEC2'
      : Object.entries(attributes).find(([name]) => name.toLowerCase() === filter.Field.toLowerCase())?.[1];
  if (value === undefined) return false;
  switch (filter.Type) {
    case 'TERM_MATCH':
    case 'EQUALS':
      return value === filter.Value;
    case 'CONTAINS':
      return value.includes(filter.Value);
    case 'ANY_OF':
      return filter.Value.split(',').some((each) => each.trim() === value);
    case 'NONE_OF':
      return !filter.Value.split(',').some((each) => each.trim() === value);
    default:
      return false;
  }
}

const PUBLICATION_DATE = '2025-11-20T00:00:00Z';

export function handlePricingAction(
  data: AwsEmulatorData,
  operation: string,
  body: unknown,
): EmulatorResponse {
  if (operation !== 'GetProducts') {
    return awsJsonError(400, 'UnknownOperationException', `Unknown operation ${operation}`);
  }
  const input = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (input.ServiceCode !== 'AmazonEC2') {
    return awsJsonError(
      400,
      'InvalidParameterException',
      `Input for ServiceCode is invalid: the emulator prices AmazonEC2 only, got ${JSON.stringify(input.ServiceCode)}`,
    );
  }
  const filters = Array.isArray(input.Filters) ? (input.Filters as PricingFilter[]) : [];
  for (const [index, filter] of filters.entries()) {
    if (
      typeof filter?.Field !== 'string' ||
      typeof filter.Value !== 'string' ||
      typeof filter.Type !== 'string'
    ) {
      return awsJsonError(400, 'InvalidParameterException', `Filters[${index}] needs Type, Field and Value`);
    }
  }
  const size = input.MaxResults === undefined ? 100 : Number(input.MaxResults);
  if (!Number.isInteger(size) || size < 1 || size > 100) {
    return awsJsonError(400, 'InvalidParameterException', 'MaxResults must be between 1 and 100');
  }
  let offset = 0;
  if (typeof input.NextToken === 'string' && input.NextToken !== '') {
    try {
      offset = decodePageToken(input.NextToken);
    } catch {
      return awsJsonError(400, 'InvalidNextTokenException', 'The NextToken is invalid');
    }
  }
  const matching = priceListProducts(data, true).filter((product) =>
    filters.every((filter) => matchesPricingFilter(attributesOf(product), filter)),
  );
  const page = matching.slice(offset, offset + size);
  const next = offset + page.length;
  return awsJsonResponse({
    FormatVersion: 'aws_v1',
    PriceList: page.map((product) => JSON.stringify(priceListItem(product, PUBLICATION_DATE))),
    ...(next < matching.length ? { NextToken: encodePageToken(next) } : {}),
  });
}

const BULK_COLUMNS = [
  'SKU',
  'OfferTermCode',
  'RateCode',
  'TermType',
  'PriceDescription',
  'EffectiveDate',
  'StartingRange',
  'EndingRange',
  'Unit',
  'PricePerUnit',
  'Currency',
  'Product Family',
  'serviceCode',
  'Location',
  'Location Type',
  'Instance Type',
  'Current Generation',
  'Instance Family',
  'vCPU',
  'Memory',
  'Tenancy',
  'Operating System',
  'License Model',
  'usageType',
  'operation',
  'CapacityStatus',
  'GPU',
  'GPU Memory',
  'MarketOption',
  'Pre Installed S/W',
  'Region Code',
] as const;

function csvField(value: string): string {
  return `"${value.replace(/"/g, '""')}"`;
}

/** The bulk price list CSV of the emulated regions, as `pricing.us-east-1.amazonaws.com` serves it. */
export function bulkPriceListCsv(data: AwsEmulatorData): string {
  const lines = [
    ['FormatVersion', 'v1.0'],
    [
      'Disclaimer',
      'This pricing list is for informational purposes only. All prices are subject to the additional terms included in the pricing pages on http://aws.amazon.com. All Free Tier prices are also subject to the terms included at https://aws.amazon.com/free/',
    ],
    ['Publication Date', PUBLICATION_DATE],
    ['Version', '20251120000000'],
    ['OfferCode', 'AmazonEC2'],
    [...BULK_COLUMNS],
  ].map((fields) => fields.map(csvField).join(','));
  for (const product of priceListProducts(data, true)) {
    const attributes = attributesOf(product);
    const row: Record<(typeof BULK_COLUMNS)[number], string> = {
      SKU: product.sku,
      OfferTermCode: ON_DEMAND_TERM,
      RateCode: `${product.sku}.${ON_DEMAND_TERM}.${HOURLY_RATE}`,
      TermType: 'OnDemand',
      PriceDescription: `$${product.price.toFixed(4)} per On Demand ${product.operatingSystem} ${product.spec.name} Instance Hour`,
      EffectiveDate: '2025-11-01',
      StartingRange: '0',
      EndingRange: 'Inf',
      Unit: 'Hrs',
      PricePerUnit: product.price.toFixed(10),
      Currency: 'USD',
      'Product Family': 'Compute Instance',
      serviceCode: 'AmazonEC2',
      Location: attributes.location ?? '',
      'Location Type': 'AWS Region',
      'Instance Type': product.spec.name,
      'Current Generation': 'Yes',
      'Instance Family': attributes.instanceFamily ?? '',
      vCPU: attributes.vcpu ?? '',
      Memory: attributes.memory ?? '',
      Tenancy: product.tenancy,
      'Operating System': product.operatingSystem,
      'License Model': 'No License required',
      usageType: attributes.usagetype ?? '',
      operation: attributes.operation ?? '',
      CapacityStatus: product.capacityStatus,
      GPU: attributes.gpu ?? '',
      'GPU Memory': attributes.gpuMemory ?? '',
      MarketOption: 'OnDemand',
      'Pre Installed S/W': 'NA',
      'Region Code': product.region,
    };
    lines.push(BULK_COLUMNS.map((column) => csvField(row[column])).join(','));
  }
  return `${lines.join('\n')}\n`;
}
