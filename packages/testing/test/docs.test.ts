/**
 * The docs generated from the code (docs/server-config.md and the capability
 * table of docs/backends.md) are regenerated in memory from the built
 * schemas and plugin descriptors; a difference from the committed files
 * means someone changed a schema or a backend without running `pnpm run docs`.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KNOWN_BACKENDS } from '@dstack/catalog';
import { describe, expect, it } from 'vitest';
import { generateDocs } from '../../../scripts/lib/docs/generate.mjs';
import { backendsWithoutPackage, KNOWN_BACKENDS_FILE } from '../../../scripts/lib/docs/known-backends.mjs';
import {
  BACKENDS_BEGIN_MARKER,
  BACKENDS_END_MARKER,
  renderBackendsTable,
  spliceGeneratedBlock,
} from '../../../scripts/lib/docs/render-docs.mjs';
import { renderObjectSections } from '../../../scripts/lib/docs/schema-tables.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

describe('generated docs', () => {
  it('are up to date with the schemas and backend plugins (else run pnpm run docs)', async () => {
    const generated = await generateDocs(root);
    expect([...generated.keys()].sort()).toEqual(['docs/backends.md', 'docs/server-config.md']);
    for (const [path, content] of generated) {
      const committed = readFileSync(join(root, path), 'utf8');
      expect(committed, `${path} is out of date: run pnpm run docs`).toBe(content);
    }
  }, 60_000);

  it('describe every backend package of the workspace', async () => {
    const generated = await generateDocs(root);
    const serverConfig = generated.get('docs/server-config.md') ?? '';
    const backends = generated.get('docs/backends.md') ?? '';
    expect(serverConfig).toContain('### local');
    expect(serverConfig).toContain('#### projects[].backends[] (type: local)');
    expect(serverConfig).toContain('| `runtime` | `"process"` or `"docker"` | optional |');
    expect(backends).toMatch(/\| `local` \| `@dstack\/backend-local` \| vm \| ✓ \|/);
  }, 60_000);

  it('name every type of the map of backend packages, with a package or as to come', async () => {
    const backends = (await generateDocs(root)).get('docs/backends.md') ?? '';
    for (const { type, packageName } of KNOWN_BACKENDS) {
      expect(backends).toMatch(
        new RegExp(`\\| \`${type}\` \\| \`${packageName}\` \\||\`${type}\` \\(\`${packageName}\`\\)`),
      );
    }
  }, 60_000);
});

describe('the docs against the map of backend packages', () => {
  const known = [
    { type: 'local', packageName: '@dstack/backend-local', catalog: 'online' },
    { type: 'aws', packageName: '@dstack/backend-aws', catalog: 'offline' },
  ] as const;
  const installed = (type: string, packageName: string, kind?: string) => ({
    packageName,
    relativeDir: `packages/${packageName.slice('@dstack/'.length)}`,
    plugin: { type, catalogProvider: kind === undefined ? undefined : { kind } },
  });

  it('names the listed types without a package in the workspace', () => {
    expect(backendsWithoutPackage(known, [installed('local', '@dstack/backend-local', 'online')])).toEqual([
      known[1],
    ]);
  });

  it('fails, naming the map and the package, when a package is not listed as itself', () => {
    expect(() =>
      backendsWithoutPackage(known, [installed('acme', '@dstack/backend-acme', 'online')]),
    ).toThrow(
      `${KNOWN_BACKENDS_FILE} disagrees with the workspace:\n  @dstack/backend-acme (packages/backend-acme) provides type "acme", which is not listed`,
    );
    expect(() => backendsWithoutPackage(known, [installed('aws', '@dstack/backend-ec2', 'offline')])).toThrow(
      '"aws" is listed as @dstack/backend-aws, but packages/backend-ec2 is @dstack/backend-ec2',
    );
    expect(() => backendsWithoutPackage(known, [installed('aws', '@dstack/backend-aws')])).toThrow(
      '"aws" is listed with catalog offline, but @dstack/backend-aws\'s catalogProvider is (none)',
    );
  });
});

describe('doc rendering', () => {
  it('renders fields with type, required, default, description and nested sections', () => {
    const markdown = renderObjectSections(
      'Top level',
      {
        type: 'object',
        properties: {
          name: { type: 'string', minLength: 1, description: 'The name.' },
          size: { default: 3, type: 'integer', minimum: 1 },
          keys: {
            type: 'array',
            items: {
              oneOf: [
                {
                  type: 'object',
                  properties: { type: { type: 'string', const: 'aes' }, secret: { type: 'string' } },
                  required: ['type', 'secret'],
                },
                { type: 'object', properties: { type: { type: 'string', const: 'identity' } } },
              ],
            },
          },
        },
        required: ['name'],
        additionalProperties: false,
      },
      { describe: (path) => (path === 'keys[] (type: aes).secret' ? 'Base64 | 32 bytes.' : undefined) },
      '',
    );
    expect(markdown).toContain('| `name` | string | required | – | The name. (not empty) |');
    expect(markdown).toContain('| `size` | integer | optional | `3` | (≥ 1) |');
    expect(markdown).toContain('| `keys` | list of one of [2 object types](#keys-type-aes) | optional |');
    expect(markdown).toContain('## keys[] (type: aes)');
    expect(markdown).toContain('| `secret` | string | required | – | Base64 \\| 32 bytes. |');
    expect(markdown).toContain('## keys[] (type: identity)');
    expect(markdown).toContain('Other fields are rejected.');
  });

  it('marks every capability of every backend, with its timeout', () => {
    const plugin = (type: string, capabilities: string[], provisioningTimeoutSeconds?: unknown) => ({
      packageName: `@dstack/backend-${type}`,
      relativeDir: `packages/backend-${type}`,
      plugin: { type, computeKind: 'container', capabilities, provisioningTimeoutSeconds },
    });
    const table = renderBackendsTable({
      core: { capabilities: ['create-instance', 'volumes'], defaultProvisioningTimeoutSeconds: 600 },
      backends: [plugin('a', ['volumes']), plugin('b', [], 90), plugin('c', ['create-instance'], () => 5)],
    });
    expect(table).toContain(
      '| type | package | compute kind | create-instance | volumes | provisioning timeout |',
    );
    expect(table).toContain('| `a` | `@dstack/backend-a` | container | – | ✓ | 600 s (default) |');
    expect(table).toContain('| `b` | `@dstack/backend-b` | container | – | – | 90 s |');
    expect(table).toContain(
      '| `c` | `@dstack/backend-c` | container | ✓ | – | per instance type (else 600 s) |',
    );
    expect(table).not.toContain('without a package');
  });

  it('names the types of the map that have no package yet after the table', () => {
    const table = renderBackendsTable({
      core: { capabilities: [], defaultProvisioningTimeoutSeconds: 600 },
      backends: [],
      withoutPackage: [
        { type: 'aws', packageName: '@dstack/backend-aws' },
        { type: 'gcp', packageName: '@dstack/backend-gcp' },
      ],
    });
    expect(table).toContain(
      'is an error naming the package to install): `aws` (`@dstack/backend-aws`), `gcp` (`@dstack/backend-gcp`).',
    );
  });

  it('replaces only the marked block of a hand-written document', () => {
    const document = `intro\n${BACKENDS_BEGIN_MARKER}\nold\n${BACKENDS_END_MARKER}\noutro\n`;
    const block = `${BACKENDS_BEGIN_MARKER}\nnew\n${BACKENDS_END_MARKER}`;
    expect(spliceGeneratedBlock(document, block)).toBe(`intro\n${block}\noutro\n`);
    expect(() => spliceGeneratedBlock('no markers', block)).toThrow(/lacks the generated-block markers/);
  });
});
