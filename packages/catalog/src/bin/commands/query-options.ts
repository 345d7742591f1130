/**
 * The query command's parsed options and the filter they make: shared by its registration
 * (query.ts) and its implementation (run-query.ts), which the command loads only when it runs.
 */
import type { QueryFilter } from '../../catalog-item.js';
import { normalizeQueryFilter, type QueryFilterInput } from '../../matching/matches.js';
import { usageError } from '../cli-error.js';

/** Options as commander hands them over (camelCase of the kebab-case flags). */
export interface QueryOptions extends Omit<QueryFilterInput, 'allowedFlags'> {
  allowedFlags?: string[];
  catalogDir?: string;
  catalogUrl?: string;
  limit?: number;
  format: 'table' | 'json';
}

/** The QueryFilter of the parsed options; throws a usage error (exit 2) for invalid values. */
export function queryOptionsToFilter(options: QueryOptions): QueryFilter {
  const { catalogDir: _dir, catalogUrl: _url, limit: _limit, format: _format, ...input } = options;
  try {
    return normalizeQueryFilter(input);
  } catch (error) {
    throw usageError((error as Error).message);
  }
}
