import { describe, expect, it } from 'vitest';
import { InstanceTakes } from './instance-takes.js';

describe('InstanceTakes', () => {
  it('skips an instance whose free blocks a take in flight holds, and tries it again once that take settled', async () => {
    const takes = new InstanceTakes();
    const readAt = performance.now();
    let release!: () => void;
    const inFlight = takes.taking('i-1', 1, () => new Promise<void>((resolve) => (release = resolve)));
    expect(takes.worthTrying('i-1', readAt, 1, 1)).toBe(false);
    // Another instance, and the same one with blocks to spare, are still worth a try.
    expect(takes.worthTrying('i-2', readAt, 1, 1)).toBe(true);
    expect(takes.worthTrying('i-1', readAt, 2, 1)).toBe(true);
    release();
    await inFlight;
    expect(takes.worthTrying('i-1', readAt, 1, 1)).toBe(true);
  });

  it('trusts a take made after a pass read the instance, and the read made after the take', () => {
    const takes = new InstanceTakes();
    const readBefore = performance.now() - 1;
    takes.taken('i-1', 4, 4);
    // Read before the take: the take filled it.
    expect(takes.worthTrying('i-1', readBefore, 2, 1)).toBe(false);
    // Read after the take: what the database said then holds (blocks were freed meanwhile).
    expect(takes.worthTrying('i-1', performance.now() + 1, 2, 1)).toBe(true);
  });

  it('frees the blocks in flight when the take fails', async () => {
    const takes = new InstanceTakes();
    await expect(takes.taking('i-1', 2, () => Promise.reject(new Error('refused')))).rejects.toThrow(
      'refused',
    );
    expect(takes.worthTrying('i-1', performance.now(), 2, 2)).toBe(true);
  });
});
