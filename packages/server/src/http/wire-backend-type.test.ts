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
});
