import { describe, expect, it } from 'vitest';
import { timeOrderedUuid } from './time-ordered-ids.js';

describe('timeOrderedUuid', () => {
  it('is a version-7 UUID whose first 48 bits are the time', () => {
    const now = Date.UTC(2026, 11, 7, 16, 30);
    const id = timeOrderedUuid(now);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Number.parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(now);
  });

  it('sorts by time, and differs within one millisecond', () => {
    const earlier = timeOrderedUuid(1_000);
    const later = timeOrderedUuid(1_001);
    expect(earlier < later).toBe(true);
    expect(timeOrderedUuid(5)).not.toBe(timeOrderedUuid(5));
  });
});
