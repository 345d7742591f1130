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
