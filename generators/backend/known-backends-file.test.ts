import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BACKEND_PACKAGES, KNOWN_BACKENDS } from '../../packages/catalog/src/backends/known-backends.js';
import { KNOWN_BACKENDS_FILE, parseKnownBackends, withKnownBackend } from './known-backends-file.js';

const repositoryRoot = resolve(import.meta.dirname, '../..');

const mapFile = `export const KNOWN_BACKENDS: readonly KnownBackend[] = Object.freeze([
  // plop:known-backends:begin — kept by \`pnpm plop backend\`.
  { type: 'local', packageName: '@dstack/backend-local', catalog: 'online' },
  { type: 'lambda', packageName: '@dstack/backend-lambda', catalog: 'offline', catalogProvider: 'lambdalabs' },
  {
    type: 'wrapped',
    packageName: '@dstack/backend-wrapped',
  },
  // plop:known-backends:end
] satisfies KnownBackend[]);
`;

describe('parseKnownBackends', () => {
  it('reads every entry, one line or wrapped, with its properties', () => {
    expect(
      parseKnownBackends(mapFile).map(({ type, packageName, catalog }) => [type, packageName, catalog]),
    ).toEqual([
      ['local', '@dstack/backend-local', 'online'],
      ['lambda', '@dstack/backend-lambda', 'offline'],
      ['wrapped', '@dstack/backend-wrapped', undefined],
    ]);
    expect(parseKnownBackends(mapFile)[1]?.properties.catalogProvider).toBe('lambdalabs');
  });

  it('reads the real map as the catalog package exports it', () => {
    const text = readFileSync(resolve(repositoryRoot, KNOWN_BACKENDS_FILE), 'utf8');

    expect(parseKnownBackends(text).map(({ properties }) => properties)).toEqual(
      KNOWN_BACKENDS.map((backend) => ({ ...backend })),
    );
    expect(
      Object.fromEntries(parseKnownBackends(text).map(({ type, packageName }) => [type, packageName])),
    ).toEqual(BACKEND_PACKAGES);
  });

  it('refuses what it cannot read instead of skipping it, naming the file', () => {
    const spread = mapFile.replace(
      '  // plop:known-backends:end',
      '  ...MORE,\n  // plop:known-backends:end',
    );
    const computed = mapFile.replace("catalog: 'online'", 'catalog: ONLINE');
    const twice = mapFile.replace(
      '  // plop:known-backends:end',
      "  { type: 'local', packageName: '@dstack/backend-local-2' },\n  // plop:known-backends:end",
    );

    expect(() => parseKnownBackends(spread, 'map.ts')).toThrow(
      /map.ts: between .* only entries are allowed, found: \.\.\.MORE,/,
    );
    expect(() => parseKnownBackends(computed, 'map.ts')).toThrow(/map.ts: cannot read "catalog: ONLINE"/);
    expect(() => parseKnownBackends(twice, 'map.ts')).toThrow(/map.ts lists the type "local" twice/);
    expect(() => parseKnownBackends(mapFile.replace(/.*known-backends:end.*\n/, ''), 'map.ts')).toThrow(
      /map.ts lacks the lines "\/\/ plop:known-backends:begin" and "\/\/ plop:known-backends:end"/,
    );
  });
});

describe('withKnownBackend', () => {
  it('adds a new type before the end marker, once', () => {
    const backend = { type: 'example', packageName: '@dstack/backend-example', catalog: 'offline' } as const;

    const once = withKnownBackend(mapFile, backend);

    expect(once).toBe(
      mapFile.replace(
        '  // plop:known-backends:end',
        "  { type: 'example', packageName: '@dstack/backend-example', catalog: 'offline' },\n  // plop:known-backends:end",
      ),
    );
    expect(withKnownBackend(once, backend)).toBe(once);
  });

  it('keeps the entry of a listed type, bringing its package and catalog kind up to date', () => {
    const unchanged = withKnownBackend(mapFile, {
      type: 'lambda',
      packageName: '@dstack/backend-lambda',
      catalog: 'offline',
    });
    const updated = withKnownBackend(mapFile, {
      type: 'wrapped',
      packageName: '@dstack/backend-wrapped',
      catalog: 'online',
    });

    expect(unchanged).toBe(mapFile);
    expect(updated).toBe(
      mapFile.replace(
        "{\n    type: 'wrapped',\n    packageName: '@dstack/backend-wrapped',\n  }",
        "{ type: 'wrapped', packageName: '@dstack/backend-wrapped', catalog: 'online' }",
      ),
    );
    expect(
      parseKnownBackends(
        withKnownBackend(mapFile, {
          type: 'lambda',
          packageName: '@dstack/backend-lambda',
          catalog: 'online',
        }),
      )[1]?.properties,
    ).toEqual({
      type: 'lambda',
      packageName: '@dstack/backend-lambda',
      catalog: 'online',
      catalogProvider: 'lambdalabs',
    });
  });

  it('refuses a package the map lists under another type', () => {
    expect(() =>
      withKnownBackend(
        mapFile,
        { type: 'lambdalabs', packageName: '@dstack/backend-lambda', catalog: 'offline' },
        'map.ts',
      ),
    ).toThrow('map.ts already lists @dstack/backend-lambda as type "lambda"');
  });
});
