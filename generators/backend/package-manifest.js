/**
 * The generated package's package.json, built as an object so that its shape
 * follows the repository's (STYLE §7) and its versions come from the
 * workspace: internal dev dependencies as `workspace:^`, peers as the same-major
 * range of their current version, tools as `catalog:`.
 */
import {
  catalogDependencies,
  workspaceFacts,
  workspacePackageVersion,
  workspacePeerRange,
} from './workspace.js';

/** The first version; the changeset the generator writes releases it as a minor (0.1.0). */
export const INITIAL_VERSION = '0.0.0';

/** Tools every backend package builds and tests with, resolved from the pnpm catalog. */
const TOOL_DEV_DEPENDENCIES = ['@types/node', 'typescript', 'vitest'];
/** Runtime dependencies of the generated code. */
const RUNTIME_DEPENDENCIES = ['zod'];
/** Workspace packages a backend builds against: the contract (peers) and the conformance suite. */
const PEERS = ['@dstack/core', '@dstack/catalog'];
const WORKSPACE_DEV_DEPENDENCIES = [...PEERS, '@dstack/testing'];

/**
 * @param {string} root the workspace root
 * @param {import('./backend-names.js').BackendNames} names
 * @param {{ kind: 'vm' | 'container', catalog: 'offline' | 'online' }} options
 */
export function backendPackageManifest(root, names, { kind, catalog }) {
  const { engines, license } = workspaceFacts(root);
  const exportsForPublishing = {
    '.': { types: './dist/index.d.ts', import: './dist/index.js' },
    './package.json': './package.json',
  };
  const workspace = (list) => Object.fromEntries(list.map((name) => [name, 'workspace:^']));
  return {
    name: names.packageName,
    version: INITIAL_VERSION,
    description: `The ${names.type} backend of dstack (${kind === 'vm' ? 'VM-based' : 'container-based'}, ${catalog} catalog provider)`,
    license,
    type: 'module',
    sideEffects: false,
    engines,
    // Inside the workspace, the `source` condition lets tests run the TypeScript without a build.
    exports: {
      '.': { source: './src/index.ts', ...exportsForPublishing['.'] },
      './package.json': './package.json',
    },
    main: './dist/index.js',
    types: './dist/index.d.ts',
    files: ['dist', '!dist/.tsbuildinfo', '!dist/**/*.test.*', '!dist/**/__fixtures__', 'CHANGELOG.md'],
    publishConfig: { access: 'public', exports: exportsForPublishing },
    scripts: {
      build: 'tsc --build',
      typecheck: 'tsc --build',
      test: `vitest run --root ../.. --project ${names.packageName}`,
      lint: 'biome check .',
    },
    dependencies: catalogDependencies(root, RUNTIME_DEPENDENCIES),
    devDependencies: {
      ...catalogDependencies(root, TOOL_DEV_DEPENDENCIES),
      ...workspace(WORKSPACE_DEV_DEPENDENCIES),
    },
    peerDependencies: Object.fromEntries(
      PEERS.map((name) => [name, workspacePeerRange(workspacePackageVersion(root, name))]),
    ),
  };
}
