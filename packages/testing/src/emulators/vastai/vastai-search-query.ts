/**
 * The search query of `POST /api/v0/bundles/` (and its `GET ?q=` and `PUT /search/asks/` forms)
 * as Vast.ai reads it: `{field: {op: value}}` filters with the operators eq, neq, gt, gte, lt,
 * lte, in and notin, plus `order` (`[[field, "asc"|"desc"]]`), `type` (on-demand, bid, reserved;
 * the CLI's old `interruptible` means bid), `limit` and `allocated_storage` (GB, which sets the
 * disk part of `dph_total`). A field the offers do not have, an unknown operator or a malformed
 * value is a 400 `invalid_args` naming it, so a backend's typo shows instead of matching nothing.
 */
import type { VastaiOffer } from './vastai-emulator-data.js';

export const VASTAI_QUERY_OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'notin'] as const;
export type VastaiQueryOperator = (typeof VASTAI_QUERY_OPERATORS)[number];
export type VastaiQueryValue = string | number | boolean | null;

export interface VastaiFilter {
  readonly field: keyof VastaiOffer;
  readonly operator: VastaiQueryOperator;
  readonly value: VastaiQueryValue | readonly VastaiQueryValue[];
}

export type VastaiOfferType = 'on-demand' | 'bid' | 'reserved';

export interface VastaiSearchQuery {
  readonly filters: readonly VastaiFilter[];
  readonly order: readonly { readonly field: keyof VastaiOffer; readonly descending: boolean }[];
  readonly type: VastaiOfferType;
  readonly limit: number;
  /** GB; when given, `dph_total` prices this much disk instead of the whole `disk_space`. */
  readonly allocatedStorage: number | undefined;
}

/** How many offers a search answers when the query sets no `limit`. */
export const DEFAULT_VASTAI_SEARCH_LIMIT = 64;

/** A search Vast.ai refuses: 400 `invalid_args` with `msg`. */
export class VastaiQueryError extends Error {
  override readonly name = 'VastaiQueryError';
}

/** Fields the API knows by another name (the CLI's aliases; gpuhunt's `compute_capability`). */
const FIELD_ALIASES: Readonly<Record<string, keyof VastaiOffer>> = {
  compute_capability: 'compute_cap',
  cuda_vers: 'cuda_max_good',
  dph: 'dph_total',
};

/** Keys of the query that are not filters. */
const QUERY_SETTINGS = new Set([
  'order',
  'type',
  'limit',
  'allocated_storage',
  'disable_bundling',
  'select_cols',
]);

const OFFER_TYPES: Readonly<Record<string, VastaiOfferType>> = {
  'on-demand': 'on-demand',
  bid: 'bid',
  interruptible: 'bid',
  reserved: 'reserved',
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isScalar(value: unknown): value is VastaiQueryValue {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value);
}

/** The offer field `name` stands for; the error lists the fields there are. */
function offerField(name: string, fields: ReadonlySet<string>, where: string): keyof VastaiOffer {
  const field = FIELD_ALIASES[name] ?? name;
  if (!fields.has(field)) {
    throw new VastaiQueryError(`${where}: unknown field ${JSON.stringify(name)}`);
  }
  return field as keyof VastaiOffer;
}

/**
 * Reads a query body; `fields` are the offers' fields. The search forms wrap it differently:
 * `PUT /search/asks/` sends `{select_cols, q}`, which callers unwrap first.
 */
export function parseVastaiSearchQuery(body: unknown, fields: ReadonlySet<string>): VastaiSearchQuery {
  if (body === undefined || body === null) body = {};
  if (!isRecord(body)) throw new VastaiQueryError('the search query must be a JSON object');
  const filters: VastaiFilter[] = [];
  for (const [name, condition] of Object.entries(body)) {
    if (QUERY_SETTINGS.has(name)) continue;
    const field = offerField(name, fields, name);
    if (!isRecord(condition)) {
      throw new VastaiQueryError(`${name}: expected {operator: value}, e.g. {"eq": true}`);
    }
    for (const [operator, value] of Object.entries(condition)) {
      if (!(VASTAI_QUERY_OPERATORS as readonly string[]).includes(operator)) {
        throw new VastaiQueryError(
          `${name}.${operator}: unknown operator; known: ${VASTAI_QUERY_OPERATORS.join(', ')}`,
        );
      }
      const listOperator = operator === 'in' || operator === 'notin';
      if (listOperator ? !Array.isArray(value) || !value.every(isScalar) : !isScalar(value)) {
        throw new VastaiQueryError(
          `${name}.${operator}: expected ${listOperator ? 'a list of values' : 'a string, number, boolean or null'}`,
        );
      }
      filters.push({ field, operator: operator as VastaiQueryOperator, value: value as VastaiQueryValue });
    }
  }
  return {
    filters,
    order: parseOrder(body.order, fields),
    type: parseType(body.type),
    limit: parseLimit(body.limit),
    allocatedStorage: parseAllocatedStorage(body.allocated_storage),
  };
}

function parseOrder(order: unknown, fields: ReadonlySet<string>): VastaiSearchQuery['order'] {
  if (order === undefined || order === null) return [];
  if (!Array.isArray(order)) throw new VastaiQueryError('order: expected [[field, "asc"|"desc"], ...]');
  return order.map((entry, index) => {
    const [name, direction = 'asc'] = Array.isArray(entry) ? entry : [entry];
    if (typeof name !== 'string' || (direction !== 'asc' && direction !== 'desc')) {
      throw new VastaiQueryError(`order[${index}]: expected [field, "asc"|"desc"]`);
    }
    return { field: offerField(name, fields, `order[${index}]`), descending: direction === 'desc' };
  });
}

function parseType(type: unknown): VastaiOfferType {
  if (type === undefined || type === null) return 'on-demand';
  const known = typeof type === 'string' ? OFFER_TYPES[type] : undefined;
  if (!known) {
    throw new VastaiQueryError(
      `type: expected on-demand, bid, reserved or interruptible, got ${JSON.stringify(type)}`,
    );
  }
  return known;
}

function parseLimit(limit: unknown): number {
  if (limit === undefined || limit === null) return DEFAULT_VASTAI_SEARCH_LIMIT;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1) {
    throw new VastaiQueryError(`limit: expected a positive integer, got ${JSON.stringify(limit)}`);
  }
  return limit;
}

function parseAllocatedStorage(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !(value > 0)) {
    throw new VastaiQueryError(
      `allocated_storage: expected a positive number of GB, got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** Numbers compare as numbers, also when one side is a numeric string (`compute_capability: "800"`). */
function compare(left: VastaiQueryValue, right: VastaiQueryValue): number | undefined {
  if (left === null || right === null) return undefined;
  const leftNumber = typeof left === 'string' && left.trim() !== '' ? Number(left) : left;
  const rightNumber = typeof right === 'string' && right.trim() !== '' ? Number(right) : right;
  if (typeof leftNumber === 'number' && typeof rightNumber === 'number') {
    if (Number.isNaN(leftNumber) || Number.isNaN(rightNumber))
      return String(left).localeCompare(String(right));
    return leftNumber - rightNumber;
  }
  if (typeof left === 'boolean' || typeof right === 'boolean') return left === right ? 0 : undefined;
  return String(left).localeCompare(String(right));
}

/** Whether `value` equals the offer's `actual`; geolocation also matches by its country code (`US`). */
function equals(field: keyof VastaiOffer, actual: VastaiQueryValue, value: VastaiQueryValue): boolean {
  if (field === 'geolocation' && typeof actual === 'string' && typeof value === 'string') {
    return actual === value || actual.split(',').at(-1)?.trim() === value;
  }
  return compare(actual, value) === 0;
}

export function matchesFilter(offer: VastaiOffer, filter: VastaiFilter): boolean {
  const actual = offer[filter.field] as VastaiQueryValue;
  const { operator, value } = filter;
  if (operator === 'in' || operator === 'notin') {
    const found = (value as readonly VastaiQueryValue[]).some((each) => equals(filter.field, actual, each));
    return operator === 'in' ? found : !found;
  }
  const scalar = value as VastaiQueryValue;
  if (operator === 'eq') return equals(filter.field, actual, scalar);
  if (operator === 'neq') return !equals(filter.field, actual, scalar);
  // A missing value (a host that reports no `cpu_cores`) fails every comparison, as in SQL.
  const difference = compare(actual, scalar);
  if (difference === undefined) return false;
  switch (operator) {
    case 'gt':
      return difference > 0;
    case 'gte':
      return difference >= 0;
    case 'lt':
      return difference < 0;
    default:
      return difference <= 0;
  }
}

/** The offers `query` selects, in its order (the book's order when it gives none), at most `limit`. */
export function searchOffers(offers: readonly VastaiOffer[], query: VastaiSearchQuery): VastaiOffer[] {
  const selected = offers
    .filter((offer) => query.filters.every((filter) => matchesFilter(offer, filter)))
    .map((offer) => priced(offer, query));
  if (query.order.length > 0) {
    selected.sort((left, right) => {
      for (const { field, descending } of query.order) {
        const difference = compare(left[field] as VastaiQueryValue, right[field] as VastaiQueryValue) ?? 0;
        if (difference !== 0) return descending ? -difference : difference;
      }
      return 0;
    });
  }
  return selected.slice(0, query.limit);
}

/** The offer as the search type prices it: `dph_total` for `allocated_storage` GB of disk; `is_bid` for bid searches. */
function priced(offer: VastaiOffer, query: VastaiSearchQuery): VastaiOffer {
  const storage = query.allocatedStorage;
  const dphTotal =
    storage === undefined
      ? offer.dph_total
      : Math.round((offer.dph_base + (storage * offer.storage_cost) / 30 / 24) * 1e6) / 1e6;
  return { ...offer, dph_total: dphTotal, is_bid: query.type === 'bid' };
}
