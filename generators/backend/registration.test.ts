import { describe, expect, it } from 'vitest';
import { addOptionalPeer, addTsconfigReference } from './registration.js';

const names = { type: 'example', packageName: '@dstack/backend-example' };

describe('addOptionalPeer', () => {
  const manifest = `${JSON.stringify(
    {
      name: '@dstack/server',
      devDependencies: { vitest: 'catalog:' },
      peerDependencies: { '@dstack/backend-local': 'workspace:^' },
      peerDependenciesMeta: { '@dstack/backend-local': { optional: true } },
    },
    null,
    2,
  )}\n`;

  it('adds an optional workspace peer and, when asked, the dev link; a second time changes nothing', () => {
    const once = addOptionalPeer(manifest, names.packageName, { devLink: true, file: 'package.json' });
    const parsed = JSON.parse(once);

    expect(parsed.peerDependencies).toEqual({
      '@dstack/backend-local': 'workspace:^',
      '@dstack/backend-example': 'workspace:>=0.0.0 <1.0.0',
    });
    expect(parsed.peerDependenciesMeta['@dstack/backend-example']).toEqual({ optional: true });
    expect(parsed.devDependencies).toEqual({ vitest: 'catalog:', '@dstack/backend-example': 'workspace:^' });
    expect(addOptionalPeer(once, names.packageName, { devLink: true, file: 'package.json' })).toBe(once);
  });

  it('leaves devDependencies alone without devLink, and creates missing sections', () => {
    const bare = '{\n  "name": "@dstack/cli"\n}\n';

    const parsed = JSON.parse(
      addOptionalPeer(bare, names.packageName, { devLink: false, file: 'package.json' }),
    );

    expect(parsed.devDependencies).toBeUndefined();
    expect(parsed.peerDependencies).toEqual({ '@dstack/backend-example': 'workspace:>=0.0.0 <1.0.0' });
  });

  it('refuses to overwrite a different range, naming the file and section', () => {
    const pinned = manifest.replace(
      '"@dstack/backend-local": "workspace:^"',
      '"@dstack/backend-local": "1.0.0"',
    );

    expect(() =>
      addOptionalPeer(pinned, '@dstack/backend-local', { devLink: false, file: 'cli.json' }),
    ).toThrow(/cli.json peerDependencies already has "@dstack\/backend-local": "1.0.0"/);
  });
});

describe('addTsconfigReference', () => {
  const tsconfig = `${JSON.stringify(
    {
      files: [],
      references: [
        { path: 'packages/core' },
        { path: 'packages/backend-local' },
        { path: 'packages/server' },
      ],
    },
    null,
    2,
  )}\n`;

  it('adds the reference after the last backend, once', () => {
    const once = addTsconfigReference(tsconfig, 'packages/backend-example');

    expect(JSON.parse(once).references.map((reference: { path: string }) => reference.path)).toEqual([
      'packages/core',
      'packages/backend-local',
      'packages/backend-example',
      'packages/server',
    ]);
    expect(addTsconfigReference(once, 'packages/backend-example')).toBe(once);
  });

  it('fails when there is no references array', () => {
    expect(() => addTsconfigReference('{"files": []}', 'packages/backend-example', 'tsconfig.json')).toThrow(
      /tsconfig.json has no "references" array/,
    );
  });
});
