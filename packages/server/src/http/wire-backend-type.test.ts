import { fromWireBackendTypes } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { toWireBackendTypes } from './wire-backend-type.js';

describe('toWireBackendTypes', () => {
  it("shows the local backend as dstack's remote, in fields and in filters, each type once", () => {
    const stored = { backends: fromWireBackendTypes(['remote', 'aws']), offer: { backend: 'local' } };
    expect(stored.backends).toEqual(['remote', 'aws', 'local']);
    // What dstack's client sent comes back as it sent it: a re-apply sees no change.
    expect(toWireBackendTypes(stored)).toEqual({ backends: ['remote', 'aws'], offer: { backend: 'remote' } });
    expect(toWireBackendTypes({ backends: ['local'] })).toEqual({ backends: ['remote'] });
  });

  it('copies only what it changes, and leaves the answer it was given as it was', () => {
    const untouched = { runs: [{ name: 'a', offer: { backend: 'aws' }, backends: ['aws', 'gcp'] }] };
    expect(toWireBackendTypes(untouched)).toBe(untouched);
    const local = { offer: { backend: 'local', price: 0 }, other: { backend: 'aws' }, list: [{ n: 1 }] };
    const wired = toWireBackendTypes(local) as typeof local;
    expect(wired).toEqual({
      offer: { backend: 'remote', price: 0 },
      other: { backend: 'aws' },
      list: [{ n: 1 }],
    });
    expect(local.offer.backend).toBe('local');
    expect(wired.other).toBe(local.other);
    expect(wired.list).toBe(local.list);
    const inList = [{ backend: 'aws' }, { backend: 'local' }];
    expect(toWireBackendTypes(inList)).toEqual([{ backend: 'aws' }, { backend: 'remote' }]);
    expect(inList[1]!.backend).toBe('local');
  });
});
