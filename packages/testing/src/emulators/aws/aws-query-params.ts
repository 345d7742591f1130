/**
 * Reading the flattened parameters of the EC2 Query API: lists are `Name.N` (1-based, no
 * `.member`), structures `Name.Member`, so `Filter.2.Value.1` is the first value of the second
 * filter. Bad or missing parameters throw the error EC2 answers with.
 */
import { Ec2ApiError } from './ec2-api-error.js';

export type QueryParams = Readonly<Record<string, string>>;

/** A filter of a Describe call: `Filter.N.Name` with its `Filter.N.Value.M`. */
export interface Ec2Filter {
  readonly name: string;
  readonly values: readonly string[];
}

/** The parameters under `prefix.` with the prefix removed. */
export function subParams(params: QueryParams, prefix: string): Record<string, string> {
  const result: Record<string, string> = {};
  const start = `${prefix}.`;
  for (const [key, value] of Object.entries(params)) {
    if (key.startsWith(start)) result[key.slice(start.length)] = value;
  }
  return result;
}

/** The members of the list `prefix` (`prefix.1…`, `prefix.1.Member…`), in index order, each as its sub-parameters plus `''` for a scalar item. */
export function listParams(params: QueryParams, prefix: string): Record<string, string>[] {
  const items = new Map<number, Record<string, string>>();
  for (const [key, value] of Object.entries(subParams(params, prefix))) {
    const dot = key.indexOf('.');
    const index = Number(dot === -1 ? key : key.slice(0, dot));
    if (!Number.isInteger(index) || index < 1) continue;
    const item = items.get(index) ?? {};
    item[dot === -1 ? '' : key.slice(dot + 1)] = value;
    items.set(index, item);
  }
  return [...items.entries()].sort(([a], [b]) => a - b).map(([, item]) => item);
}

/** The scalar items of the list `prefix` (`InstanceId.1`, `InstanceId.2`…). */
export function listValues(params: QueryParams, prefix: string): string[] {
  return listParams(params, prefix)
    .map((item) => item[''])
    .filter((value): value is string => value !== undefined);
}

export function filtersOf(params: QueryParams): Ec2Filter[] {
  return listParams(params, 'Filter').map((item, index) => {
    const name = item.Name;
    if (!name) throw new Ec2ApiError(400, 'InvalidParameterValue', `Filter.${index + 1}.Name is required`);
    return { name, values: listValues(item, 'Value') };
  });
}

export function requiredParam(params: QueryParams, name: string): string {
  const value = params[name];
  if (value === undefined || value === '') {
    throw new Ec2ApiError(400, 'MissingParameter', `The request must contain the parameter ${name}`);
  }
  return value;
}

/** An integer parameter within [min, max], or `fallback` when absent. */
export function integerParam(
  params: QueryParams,
  name: string,
  range: { min: number; max: number },
  fallback: number,
): number {
  const text = params[name];
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < range.min || value > range.max) {
    throw new Ec2ApiError(
      400,
      'InvalidParameterValue',
      `Value (${text}) for parameter ${name} is invalid. Expected an integer between ${range.min} and ${range.max}.`,
    );
  }
  return value;
}

export function booleanParam(params: QueryParams, name: string): boolean | undefined {
  const text = params[name];
  if (text === undefined) return undefined;
  if (text !== 'true' && text !== 'false') {
    throw new Ec2ApiError(400, 'InvalidParameterValue', `Value (${text}) for parameter ${name} is invalid.`);
  }
  return text === 'true';
}

/** Tags given as `prefix.N.Key` / `prefix.N.Value`. */
export function tagsOf(params: QueryParams, prefix: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const item of listParams(params, prefix)) {
    if (item.Key === undefined)
      throw new Ec2ApiError(400, 'InvalidParameterValue', `${prefix}.N.Key is required`);
    tags.set(item.Key, item.Value ?? '');
  }
  return tags;
}

/** EC2's filter value matching: `*` any run of characters, `?` one character, the rest literally. */
export function matchesFilterValue(pattern: string, value: string): boolean {
  if (!pattern.includes('*') && !pattern.includes('?')) return pattern === value;
  const expression = pattern
    .split('')
    .map((char) => (char === '*' ? '.*' : char === '?' ? '.' : char.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${expression}$`, 's').test(value);
}

/**
 * Applies Describe filters: each filter must match (AND), one of its values suffices (OR).
 * `fields(name)` gives the values of a filter name for one resource, or undefined for a name the
 * resource does not know (EC2 rejects those).
 */
export function applyFilters<T>(
  resources: readonly T[],
  filters: readonly Ec2Filter[],
  fields: (resource: T, filterName: string) => readonly string[] | undefined,
): T[] {
  return resources.filter((resource) =>
    filters.every((filter) => {
      const values = fields(resource, filter.name);
      if (values === undefined) {
        throw new Ec2ApiError(400, 'InvalidParameterValue', `The filter '${filter.name}' is invalid`);
      }
      return filter.values.some((pattern) => values.some((value) => matchesFilterValue(pattern, value)));
    }),
  );
}

/** Tag filters every taggable resource shares: `tag:KEY` and `tag-key`. */
export function tagFilterValues(tags: ReadonlyMap<string, string>, filterName: string): string[] | undefined {
  if (filterName.startsWith('tag:')) {
    const value = tags.get(filterName.slice(4));
    return value === undefined ? [] : [value];
  }
  if (filterName === 'tag-key') return [...tags.keys()];
  if (filterName === 'tag-value') return [...tags.values()];
  return undefined;
}

/**
 * One page of `items`: `NextToken` is the offset of the next page (opaque to the client),
 * `MaxResults` the page size within `range` (all items when absent).
 */
export function pageOf<T>(
  items: readonly T[],
  params: QueryParams,
  range: { min: number; max: number },
): { page: T[]; nextToken: string | undefined } {
  const size = integerParam(params, 'MaxResults', range, Number.POSITIVE_INFINITY);
  let offset = 0;
  const token = params.NextToken;
  if (token !== undefined && token !== '') {
    offset = decodePageToken(token);
    if (offset > items.length)
      throw new Ec2ApiError(400, 'InvalidParameterValue', 'The NextToken is invalid');
  }
  const page = items.slice(offset, offset + size);
  const next = offset + page.length;
  return { page, nextToken: next < items.length ? encodePageToken(next) : undefined };
}

export function encodePageToken(offset: number): string {
  return Buffer.from(JSON.stringify({ offset }), 'utf8').toString('base64url');
}

export function decodePageToken(token: string): number {
  try {
    const decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { offset?: unknown };
    if (typeof decoded.offset === 'number' && Number.isInteger(decoded.offset) && decoded.offset >= 0) {
      return decoded.offset;
    }
  } catch {
    // falls through to the error below
  }
  throw new Ec2ApiError(400, 'InvalidParameterValue', `The NextToken ${JSON.stringify(token)} is invalid`);
}
