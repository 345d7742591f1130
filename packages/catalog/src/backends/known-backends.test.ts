import { describe, expect, it } from 'vitest';
import {
  BACKEND_PACKAGES,
  catalogProviderName,
  KNOWN_BACKENDS,
  OFFLINE_CATALOG_PACKAGES,
} from './known-backends.js';

/** The shape `@dstack/core` accepts for a backend type (BACKEND_TYPE_PATTERN), repeated: the catalog does not depend on core. */
const BACKEND_TYPE = /^[a-z][a-z0-9_-]{0,39}$/;

describe('KNOWN_BACKENDS', () => {
  it('has one entry per type and per package, each a @dstack/backend-* package', () => {
    const types = KNOWN_BACKENDS.map(({ type }) => type);
    const packages = KNOWN_BACKENDS.map(({ packageName }) => packageName);

    expect(new Set(types).size, `duplicate types in ${types.join(', ')}`).toBe(types.length);
    expect(new Set(packages).size, `duplicate packages in ${packages.join(', ')}`).toBe(packages.length);
    for (const { type, packageName, catalog } of KNOWN_BACKENDS) {
      expect(type).toMatch(BACKEND_TYPE);
      expect(packageName).toMatch(/^@dstack\/backend-[a-z0-9-]+$/);
      expect([undefined, 'offline', 'online']).toContain(catalog);
    }
  });

  it('names a gpuhunt provider of its own only for offline catalogs, and no two alike', () => {
    const named = KNOWN_BACKENDS.filter((backend) => backend.catalogProvider !== undefined);
    expect(named.filter(({ catalog }) => catalog !== 'offline')).toEqual([]);
    const offlineNames = KNOWN_BACKENDS.filter(({ catalog }) => catalog === 'offline').map(
      catalogProviderName,
    );
    expect(new Set(offlineNames).size).toBe(offlineNames.length);
  });

  it('cannot be changed at run time', () => {
    expect(Object.isFrozen(KNOWN_BACKENDS)).toBe(true);
    expect(Object.isFrozen(BACKEND_PACKAGES)).toBe(true);
    expect(Object.isFrozen(OFFLINE_CATALOG_PACKAGES)).toBe(true);
  });
});

describe('the maps derived from it', () => {
  it('maps every type to its package, in the order of the list', () => {
    expect(Object.entries(BACKEND_PACKAGES)).toEqual(
      KNOWN_BACKENDS.map(({ type, packageName }) => [type, packageName]),
    );
    expect(BACKEND_PACKAGES.aws).toBe('@dstack/backend-aws');
    expect(BACKEND_PACKAGES.local).toBe('@dstack/backend-local');
  });

  it('offers collect only the offline providers, under gpuhunt names', () => {
    expect(OFFLINE_CATALOG_PACKAGES.lambdalabs).toBe('@dstack/backend-lambda');
    expect(OFFLINE_CATALOG_PACKAGES.aws).toBe('@dstack/backend-aws');
    expect(OFFLINE_CATALOG_PACKAGES).not.toHaveProperty('vastai');
    expect(OFFLINE_CATALOG_PACKAGES).not.toHaveProperty('local');
    for (const [provider, packageName] of Object.entries(OFFLINE_CATALOG_PACKAGES)) {
      const backend = KNOWN_BACKENDS.find((entry) => entry.packageName === packageName);
      expect(backend?.catalog).toBe('offline');
      expect(backend && catalogProviderName(backend)).toBe(provider);
    }
  });
});
