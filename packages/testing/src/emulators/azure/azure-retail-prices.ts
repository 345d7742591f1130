/**
 * The Azure Retail Prices API (`GET https://prices.azure.com/api/retail/prices`, no
 * authentication) over the emulator's model: every size's meters in every region it is sold in,
 * as the API lists Virtual Machines meters: Linux pay-as-you-go and spot, the retiring
 * `Low Priority` meter, the Windows product (dearer, with its DevTest price) and one-year
 * reservations. `$filter` takes the OData the API documents for these fields (`field eq 'value'`
 * and `contains(field, 'value') [eq true|false]`, joined by `and`); pages hold `pageSize` items,
 * `$skip` pages on, and `NextPageLink` names the next page until the last.
 */
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import { EmulatorHttpError, json } from '../../emulator/emulator-responses.js';
import type { EmulatorRequest } from '../../emulator/emulator-server.js';
import type { AzureEmulatorData, AzureRegion, AzureVmSize } from './azure-emulator-data.js';

/** The API's page: 1000 meters. */
export const AZURE_RETAIL_PRICES_PAGE_SIZE = 1000;

/** One meter as the API lists it. */
export interface AzureRetailPrice {
  readonly currencyCode: 'USD';
  readonly tierMinimumUnits: number;
  readonly reservationTerm?: string;
  readonly retailPrice: number;
  readonly unitPrice: number;
  readonly armRegionName: string;
  readonly location: string;
  readonly effectiveStartDate: string;
  readonly meterId: string;
  readonly meterName: string;
  readonly productId: string;
  readonly skuId: string;
  readonly productName: string;
  readonly skuName: string;
  readonly serviceName: 'Virtual Machines';
  readonly serviceId: string;
  readonly serviceFamily: 'Compute';
  readonly unitOfMeasure: string;
  /** `Consumption`, `DevTestConsumption` or `Reservation`; `$filter` calls it `priceType`. */
  readonly type: string;
  readonly isPrimaryMeterRegion: boolean;
  readonly armSkuName: string;
}

/** Windows Server's licence on top of the Linux price, per vCPU-hour (Azure's list). */
const WINDOWS_LICENCE_PER_VCPU = 0.046;
/** One year reserved, as a share of a year of pay-as-you-go. */
const RESERVATION_SHARE = 0.62;

const round = (value: number) => Math.round(value * 10_000) / 10_000;

/** The meters of one size in one region, in the API's order for a size. */
function sizeMeters(size: AzureVmSize, region: AzureRegion): AzureRetailPrice[] {
  const prices = size.prices[region.name];
  if (!prices) return [];
  const [onDemand, spot] = prices;
  const meter = size.name.replace(/^Standard_/, '').replaceAll('_', ' ');
  const product = `Virtual Machines ${size.series} Series`;
  const base = {
    currencyCode: 'USD',
    tierMinimumUnits: 0,
    armRegionName: region.name,
    location: region.displayName,
    effectiveStartDate: '2024-11-01T00:00:00Z',
    serviceName: 'Virtual Machines',
    serviceId: 'DZH313Z7MMC8',
    serviceFamily: 'Compute',
    unitOfMeasure: '1 Hour',
    isPrimaryMeterRegion: true,
    armSkuName: size.name,
  } as const;
  const id = (kind: string) => `${region.name}-${size.name}-${kind}`.toLowerCase();
  const linux = (skuName: string, price: number, type = 'Consumption', extra = {}): AzureRetailPrice => ({
    ...base,
    retailPrice: price,
    unitPrice: price,
    meterId: id(`${skuName}-${type}`),
    meterName: skuName,
    productId: `prod-${size.series}`,
    skuId: id(skuName),
    productName: product,
    skuName,
    type,
    ...extra,
  });
  const windowsPrice = round(onDemand + WINDOWS_LICENCE_PER_VCPU * size.vcpus);
  const meters: AzureRetailPrice[] = [
    linux(meter, onDemand),
    ...(spot === null ? [] : [linux(`${meter} Spot`, spot), linux(`${meter} Low Priority`, spot)]),
    {
      ...linux(meter, windowsPrice),
      productName: `${product} Windows`,
      meterId: id('windows'),
      productId: `prod-${size.series}-windows`,
    },
    {
      ...linux(meter, round(onDemand * 0.7), 'DevTestConsumption'),
      productName: `${product} Windows`,
      productId: `prod-${size.series}-windows`,
    },
    linux(meter, round(onDemand * 8760 * RESERVATION_SHARE), 'Reservation', {
      reservationTerm: '1 Year',
      unitPrice: round(onDemand * 8760 * RESERVATION_SHARE),
    }),
  ];
  return meters;
}

/** Every meter of the model: regions, then sizes, in the model's order. */
export function retailPrices(data: AzureEmulatorData): AzureRetailPrice[] {
  return data.regions.flatMap((region) => data.sizes.flatMap((size) => sizeMeters(size, region)));
}

type Predicate = (item: AzureRetailPrice) => boolean;

function badFilter(filter: string): EmulatorHttpError {
  return new EmulatorHttpError(
    json(
      { Error: { Code: 'BadRequest', Message: `Invalid OData parameters supplied: $filter=${filter}` } },
      400,
    ),
    `Invalid $filter ${filter}`,
  );
}

/** A field of `$filter`: the item's own, `priceType` being its `type`. */
function fieldValue(item: AzureRetailPrice, field: string): string {
  const key = field === 'priceType' ? 'type' : field;
  const value = (item as unknown as Record<string, unknown>)[key];
  return value === undefined || value === null ? '' : String(value);
}

const CLAUSE_EQ = /^(\w+) eq '((?:[^']|'')*)'$/;
const CLAUSE_CONTAINS = /^contains\((\w+),\s*'((?:[^']|'')*)'\)(?: eq (true|false))?$/;

/** The OData `$filter` as a predicate; a clause outside what the API takes is a 400. */
export function parseRetailPricesFilter(filter: string | undefined): Predicate {
  if (filter === undefined || filter.trim() === '') return () => true;
  const clauses = filter.split(/\s+and\s+/i).map((clause) => clause.trim());
  const predicates = clauses.map((clause): Predicate => {
    const equal = CLAUSE_EQ.exec(clause);
    if (equal) {
      const [, field = '', value = ''] = equal;
      const expected = value.replaceAll("''", "'");
      // The API compares values without case.
      return (item) => fieldValue(item, field).toLowerCase() === expected.toLowerCase();
    }
    const contains = CLAUSE_CONTAINS.exec(clause);
    if (contains) {
      const [, field = '', value = '', wanted = 'true'] = contains;
      const part = value.replaceAll("''", "'");
      return (item) => fieldValue(item, field).includes(part) === (wanted === 'true');
    }
    throw badFilter(filter);
  });
  return (item) => predicates.every((predicate) => predicate(item));
}

/** `GET /api/retail/prices`: one page of the meters `$filter` keeps, from `$skip`. */
export function answerRetailPrices(
  request: EmulatorRequest,
  data: AzureEmulatorData,
  pageSize: number,
): EmulatorResponse {
  const filter = request.query.$filter;
  const skip = Number(request.query.$skip ?? '0');
  if (!Number.isInteger(skip) || skip < 0) throw badFilter(`$skip=${request.query.$skip}`);
  const matching = retailPrices(data).filter(parseRetailPricesFilter(filter));
  const items = matching.slice(skip, skip + pageSize);
  let next: string | null = null;
  if (skip + pageSize < matching.length) {
    const query = new URLSearchParams({ ...request.query, $skip: String(skip + pageSize) });
    next = `${request.baseUrl}${request.path}?${query.toString().replaceAll('+', '%20')}`;
  }
  return json({
    BillingCurrency: 'USD',
    CustomerEntityId: 'Default',
    CustomerEntityType: 'Retail',
    Items: items,
    NextPageLink: next,
    Count: items.length,
  });
}
