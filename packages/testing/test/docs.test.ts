/**
 * The docs generated from the code (docs/server-config.md and the capability
 * table of docs/backends.md) are regenerated in memory from the built
 * schemas and plugin descriptors; a difference from the committed files
 * means someone changed a schema or a backend without running `pnpm run docs`.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { generateDocs } from '../../../scripts/lib/docs/generate.mjs';
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
  });

  it('replaces only the marked block of a hand-written document', () => {
    const document = `intro\n${BACKENDS_BEGIN_MARKER}\nold\n${BACKENDS_END_MARKER}\noutro\n`;
    const block = `${BACKENDS_BEGIN_MARKER}\nnew\n${BACKENDS_END_MARKER}`;
    expect(spliceGeneratedBlock(document, block)).toBe(`intro\n${block}\noutro\n`);
    expect(() => spliceGeneratedBlock('no markers', block)).toThrow(/lacks the generated-block markers/);
  });
});
