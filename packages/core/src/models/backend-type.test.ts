import { describe, expect, it } from 'vitest';
import { fromWireBackendTypes, wireBackendType } from './backend-type.js';

describe("the local backend on dstack's wire", () => {
  it('is shown as remote, other types as they are', () => {
    expect(wireBackendType('local')).toBe('remote');
    expect(wireBackendType('aws')).toBe('aws');
  });

  it('is named again by a backends filter echoed back as remote', () => {
    expect(fromWireBackendTypes(['remote'])).toEqual(['remote', 'local']);
    expect(fromWireBackendTypes(['aws', 'local', 'remote'])).toEqual(['aws', 'local', 'remote']);
    expect(fromWireBackendTypes(['aws'])).toEqual(['aws']);
    expect(fromWireBackendTypes(undefined)).toBeUndefined();
  });
});
