import { findAccelerators } from '@dstack/catalog';
import { describe, expect, it } from 'vitest';
import { ConfigurationError, DstackError } from './errors.js';

describe('errors', () => {
  it('recognises subclasses by marker, not by instanceof', () => {
    const error = new ConfigurationError('bad', { path: ['resources', 'gpu'], line: 3, column: 5 });
    expect(DstackError.isInstance(error)).toBe(true);
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect(ConfigurationError.isInstance(new DstackError('x'))).toBe(false);
    expect(ConfigurationError.isInstance({ name: 'ConfigurationError' })).toBe(false);
  });

  it('reaches the catalog through the workspace source condition', () => {
    expect(findAccelerators({ names: ['a100'] }).map((a) => a.memory)).toEqual([40, 80]);
  });
});
