/**
 * `pnpm plop backend`: a new backend package in the workspace, registered in the
 * one map of backend packages (which the server, the catalog's `collect` and the
 * docs read) and as an optional peer of the server and CLI, linked, and documented.
 *
 * Interactive, or all at once with plop's bypass by prompt name:
 * `pnpm plop backend -- --name ExampleCloud --kind vm --catalog online`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { backendNameProblem, backendNames, withListedPackageName } from './backend-names.js';
import { KNOWN_BACKENDS_FILE, readKnownBackends } from './known-backends-file.js';
import { backendPackageManifest, INITIAL_VERSION } from './package-manifest.js';
import { registerBackend } from './registration.js';
import { backendConflict } from './workspace.js';

const TEMPLATES = join(dirname(fileURLToPath(import.meta.url)), 'templates');

/** The script `pnpm run docs` runs; another part of the repository provides it, so it may be absent. */
const DOCS_SCRIPT = 'scripts/generate-docs.mjs';
/** Set to `true`, the generator leaves the docs as they are (`pnpm run docs` regenerates them). */
export const SKIP_DOCS_VARIABLE = 'DSTACK_PLOP_SKIP_DOCS';

export const COMPUTE_KINDS = ['vm', 'container'];
export const CATALOG_MODES = ['offline', 'online'];

/** The template of each generated file and where it goes, relative to the workspace root. */
function generatedFiles(names) {
  const source = `${names.directory}/src/${names.kebab}`;
  return [
    ['tsconfig.json.hbs', `${names.directory}/tsconfig.json`],
    ['vitest.config.ts.hbs', `${names.directory}/vitest.config.ts`],
    ['README.md.hbs', `${names.directory}/README.md`],
    ['CHANGELOG.md.hbs', `${names.directory}/CHANGELOG.md`],
    ['changeset.md.hbs', `.changeset/${names.kebab}-backend.md`],
    ['src/index.ts.hbs', `${names.directory}/src/index.ts`],
    ['src/version.ts.hbs', `${names.directory}/src/version.ts`],
    ['src/version.test.ts.hbs', `${names.directory}/src/version.test.ts`],
    ['src/config.ts.hbs', `${source}-config.ts`],
    ['src/config.test.ts.hbs', `${source}-config.test.ts`],
    ['src/configurator.ts.hbs', `${source}-configurator.ts`],
    ['src/compute.ts.hbs', `${source}-compute.ts`],
    ['src/catalog-provider.ts.hbs', `${source}-catalog-provider.ts`],
    ['src/plugin.ts.hbs', `${source}-plugin.ts`],
    ['src/conformance.test.ts.hbs', `${source}-conformance.test.ts`],
  ];
}

/**
 * The names of the backend `input` names in the workspace at `root`: a type the map
 * of backend packages already lists keeps the package name listed there.
 * @param {string} root
 * @param {string} input
 */
function workspaceBackendNames(root, input) {
  const names = backendNames(input);
  const listed = readKnownBackends(root).find((backend) => backend.type === names.type);
  return listed ? withListedPackageName(names, listed.packageName) : names;
}

/**
 * Runs a command in the workspace; throws with its output when it fails.
 * @param {string} root
 * @param {string} command
 * @param {string[]} args
 */
function run(root, command, args) {
  const result = spawnSync(command, args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (result.error) throw new Error(`${command} ${args.join(' ')} could not start: ${result.error.message}`);
  if (result.status !== 0) {
    const output = `${result.stdout}\n${result.stderr}`.trim().split('\n').slice(-30).join('\n');
    throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status}):\n${output}`);
  }
}

/** @param {import('plop').NodePlopAPI} plop */
export function registerBackendGenerator(plop) {
  const root = resolve(plop.getPlopfilePath(), '..');

  plop.setGenerator('backend', {
    description: 'a backend package (@dstack/backend-<name>), registered with the server and CLI',
    prompts: [
      {
        type: 'input',
        name: 'name',
        message:
          'Backend name (e.g. ExampleCloud → type "examplecloud", package @dstack/backend-example-cloud):',
        validate: (input) => {
          const problem = backendNameProblem(input);
          if (problem !== undefined) return problem;
          return backendConflict(root, workspaceBackendNames(root, input)) ?? true;
        },
      },
      {
        type: 'list',
        name: 'kind',
        message: 'Compute kind:',
        choices: [
          { name: 'vm: the backend launches VMs that run the shim (fleets, privileged runs)', value: 'vm' },
          {
            name: 'container: the backend runs each job in a container running the runner',
            value: 'container',
          },
        ],
      },
      {
        type: 'list',
        name: 'catalog',
        message: 'Catalog provider:',
        choices: [
          { name: 'offline: offers collected ahead of time into a catalog file', value: 'offline' },
          { name: 'online: offers asked live on each query (marketplaces)', value: 'online' },
        ],
      },
    ],
    actions: (answers) => {
      const names = workspaceBackendNames(root, String(answers?.name));
      const kind = String(answers?.kind);
      const catalog = String(answers?.catalog);
      const data = {
        ...names,
        kind,
        catalog,
        isVm: kind === 'vm',
        isOnline: catalog === 'online',
        computeInterface: kind === 'vm' ? 'ComputeWithCreateInstance' : 'Compute',
        version: INITIAL_VERSION,
        provisioningTimeoutSeconds: 600,
      };
      const files = generatedFiles(names);
      return [
        function checkTarget() {
          if (!COMPUTE_KINDS.includes(kind))
            throw new Error(`kind must be one of ${COMPUTE_KINDS.join(', ')}`);
          if (!CATALOG_MODES.includes(catalog)) {
            throw new Error(`catalog must be one of ${CATALOG_MODES.join(', ')}`);
          }
          const conflict = backendConflict(root, names);
          if (conflict !== undefined) throw new Error(`Refusing to generate: ${conflict}`);
          return `${names.packageName}: type "${names.type}", ${kind}, ${catalog} catalog`;
        },
        ...files.map(([template, destination]) => ({
          type: 'add',
          path: join(root, destination),
          templateFile: join(TEMPLATES, template),
          data,
          abortOnFail: true,
        })),
        function writePackageJson() {
          const path = join(root, names.directory, 'package.json');
          const manifest = backendPackageManifest(root, names, { kind, catalog });
          writeFileSync(path, `${JSON.stringify(manifest, null, 2)}\n`);
          return relative(root, path);
        },
        function formatWithBiome() {
          // Import and export lists are sorted by name, so their order depends on the
          // backend's name: let the repository's formatter settle it (safe fixes only).
          run(root, 'pnpm', ['exec', 'biome', 'check', '--write', names.directory]);
          return `biome check --write ${names.directory}`;
        },
        function registerWithServerAndCli() {
          const changed = registerBackend(root, names, { catalog });
          // An entry is written on one line; let the formatter wrap it if it is too long.
          if (changed.includes(KNOWN_BACKENDS_FILE)) {
            run(root, 'pnpm', ['exec', 'biome', 'format', '--write', KNOWN_BACKENDS_FILE]);
          }
          return changed.length > 0 ? changed.join(', ') : 'already registered';
        },
        function linkWorkspace() {
          // A new importer changes the lockfile by design; pnpm freezes it by default
          // when CI is set, so say explicitly that this install may update it.
          try {
            run(root, 'pnpm', ['install', '--offline', '--no-frozen-lockfile']);
            return 'pnpm install --offline';
          } catch (error) {
            // A store filled from a lockfile alone lacks the registry metadata pnpm
            // wants when a new importer makes it re-resolve a shared dependency;
            // fetch just that metadata and use the store for the rest.
            if (!String(error).includes('ERR_PNPM_NO_OFFLINE_META')) throw error;
            run(root, 'pnpm', ['install', '--prefer-offline', '--no-frozen-lockfile']);
            return 'pnpm install --prefer-offline (the offline metadata cache was incomplete)';
          }
        },
        function regenerateDocs() {
          if (!existsSync(join(root, DOCS_SCRIPT))) return `skipped: ${DOCS_SCRIPT} does not exist`;
          // Regenerating compiles the workspace: who generates several backends does it once, at the end.
          if (process.env[SKIP_DOCS_VARIABLE] === 'true') {
            return `skipped: ${SKIP_DOCS_VARIABLE}=true (run pnpm run docs when done)`;
          }
          // `pnpm run`, not `pnpm docs`: pnpm's built-in `docs` command would shadow the script.
          run(root, 'pnpm', ['run', 'docs']);
          return 'pnpm run docs';
        },
      ];
    },
  });
}
