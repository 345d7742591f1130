import { describe, expect, it } from 'vitest';
import { renewalDue } from './acme-certificates.js';

const DAY = 24 * 3600_000;

describe('renewalDue', () => {
  it('renews once less than a third of the lifetime is left (30 days of a 90-day certificate)', () => {
    const issued = Date.UTC(2026, 0, 1);
    const expires = issued + 90 * DAY;
    expect(renewalDue(issued, expires, expires - 31 * DAY)).toBe(false);
    expect(renewalDue(issued, expires, expires - 29 * DAY)).toBe(true);
    expect(renewalDue(issued, expires, expires + DAY)).toBe(true);
  });
});
