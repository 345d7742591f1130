import { describe, expect, it } from 'vitest';
import { NotImplementedError } from '../errors.js';
import type { Compute } from './compute.js';
import { isNotImplemented, notImplemented } from './not-implemented.js';

describe('notImplemented', () => {
  it('rejects with NotImplementedError naming the method and what it must do', async () => {
    const getOffers = notImplemented<Compute['getOffers']>('ExampleCompute.getOffers');
    const error = await getOffers({} as never).catch((thrown: unknown) => thrown);
    expect(NotImplementedError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe(
      'ExampleCompute.getOffers() is not implemented: it must return the offers matching the requirements, each with its availability',
    );
  });

  it('marks the stub, and only the stub', () => {
    expect(isNotImplemented(notImplemented('X.runJob'))).toBe(true);
    expect(isNotImplemented(async () => {})).toBe(false);
    expect(isNotImplemented(undefined)).toBe(false);
  });
});
