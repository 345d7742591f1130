/**
 * How Compute Engine v1 shows its resources: links under `https://www.googleapis.com/compute/v1/`
 * (dstack strips exactly that prefix), int64 fields as strings, RFC 3339 times with an offset,
 * and lists paged with `maxResults` / `pageToken` → `items` / `nextPageToken`.
 */
import { invalidField } from './gcp-api-error.js';

export const COMPUTE_LINK_PREFIX = 'https://www.googleapis.com/compute/v1/';

export function link(path: string): string {
  return `${COMPUTE_LINK_PREFIX}${path}`;
}

/** `2026-01-01T00:00:00.000-08:00`: Compute answers times in Pacific time with an offset; UTC is as valid. */
export function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '+00:00');
}

/** The last segment of a resource reference (`zones/Z/machineTypes/T`, a full URL or a bare name). */
export function lastSegment(reference: string): string {
  return reference.split('/').filter(Boolean).at(-1) ?? '';
}

/** One page of `items` as `maxResults` (default 500, at most 500) and `pageToken` ask. */
export function page<T>(
  items: readonly T[],
  query: Readonly<Record<string, string>>,
  defaultSize = 500,
  maxSize = 500,
): { items: T[]; nextPageToken?: string } {
  const size = query.maxResults === undefined ? defaultSize : Number(query.maxResults);
  if (!Number.isInteger(size) || size < 0)
    throw invalidField('maxResults', `${query.maxResults} is not a count`);
  const offset = decodePageToken(query.pageToken, 'pageToken');
  const take = Math.min(size === 0 ? defaultSize : size, maxSize);
  const slice = items.slice(offset, offset + take);
  const next = offset + take;
  return { items: slice, ...(next < items.length ? { nextPageToken: encodePageToken(next) } : {}) };
}

export function encodePageToken(offset: number): string {
  return Buffer.from(`offset:${offset}`).toString('base64url');
}

export function decodePageToken(token: string | undefined, field: string): number {
  if (token === undefined || token === '') return 0;
  const match = /^offset:(\d+)$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
  if (!match) throw invalidField(field, 'the page token is not one this API gave');
  return Number(match[1]);
}

/** Compute's quota metric for GPUs of `acceleratorType`, e.g. `NVIDIA_T4_GPUS`, `PREEMPTIBLE_NVIDIA_L4_GPUS`. */
export function gpuQuotaMetric(acceleratorType: string, spot: boolean): string {
  const model = acceleratorType
    .replace(/^nvidia-(tesla-)?/, '')
    .replace(/^(h100|h100-mega|h200)-\d+gb$/, '$1')
    .toUpperCase()
    .replace(/-/g, '_');
  return `${spot ? 'PREEMPTIBLE_' : ''}NVIDIA_${model}_GPUS`;
}

interface FilterTerm {
  readonly path: readonly string[];
  readonly negated: boolean;
  readonly value: string;
}

/**
 * Compute's list `filter` in its common forms: `name = "x"`, `status != TERMINATED`,
 * `labels.owner = dstack`, several terms ANDed (`(a = "1") (b = "2")` or with `AND`), `eq`/`ne`
 * with a regular expression. Anything else is 400 naming the field, rather than a silent match-all.
 */
export function parseListFilter(filter: string | undefined): ((item: unknown) => boolean) | undefined {
  if (filter === undefined || filter.trim() === '') return undefined;
  const terms: (FilterTerm & { regex: boolean })[] = [];
  const pattern =
    /\(?\s*([A-Za-z][\w.]*)\s*(=|!=|\beq\b|\bne\b)\s*("(?:[^"\\]|\\.)*"|[^\s()]+)\s*\)?(?:\s+AND\s+|\s+|$)/gy;
  let consumed = 0;
  for (let match = pattern.exec(filter); match; match = pattern.exec(filter)) {
    const [all, field, operator, raw] = match as unknown as [string, string, string, string];
    const value = raw.startsWith('"') ? raw.slice(1, -1).replace(/\\(.)/g, '$1') : raw;
    terms.push({
      path: field.split('.'),
      negated: operator === '!=' || operator === 'ne',
      value,
      regex: operator === 'eq' || operator === 'ne',
    });
    consumed += all.length;
    if (pattern.lastIndex >= filter.length) break;
  }
  if (terms.length === 0 || consumed !== filter.length) {
    throw invalidField(
      'filter',
      `the emulator understands 'field = value' terms ANDed together, got '${filter}'`,
    );
  }
  return (item) =>
    terms.every((term) => {
      let value: unknown = item;
      for (const key of term.path) value = (value as Record<string, unknown> | undefined)?.[key];
      const text = value === undefined ? '' : String(value);
      const matches = term.regex ? new RegExp(`^(?:${term.value})$`).test(text) : text === term.value;
      return matches !== term.negated;
    });
}
