import { ResourceNotFoundError, ServerClientError } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { nameTakenError, requireEachFound, requireFound } from './named-resources.js';

describe('named resources', () => {
  it('gives back a found row, and names the one missing', () => {
    expect(requireFound('Gateway', 'main', { id: 'g1' })).toEqual({ id: 'g1' });
    for (const missing of [undefined, null]) {
      const thrown = (() => {
        try {
          requireFound('Gateway', 'main', missing);
        } catch (error) {
          return error;
        }
      })();
      expect(ResourceNotFoundError.isInstance(thrown)).toBe(true);
      expect((thrown as Error).message).toBe('Gateway main not found');
    }
  });

  it('names every name without a row, in the order asked', () => {
    const rows = [{ run_name: 'b' }];
    expect(requireEachFound('Run', ['b'], rows, (row) => row.run_name)).toBe(rows);
    expect(() => requireEachFound('Run', ['a', 'b', 'c'], rows, (row) => row.run_name)).toThrow(
      'Run a, c not found',
    );
  });

  it("answers a taken name as dstack does: resource_exists on the configuration's name", () => {
    const error = nameTakenError('Volume', 'vol-a');
    expect(ServerClientError.isInstance(error)).toBe(true);
    expect(error.message).toBe('Volume vol-a already exists');
    expect(error.code).toBe('resource_exists');
    expect(error.fields).toEqual([['configuration', 'name']]);
  });
});
