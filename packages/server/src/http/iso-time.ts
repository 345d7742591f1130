/** A time of the database (ms since the epoch) as the API gives it: ISO 8601, or null. */
export function isoTime(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
