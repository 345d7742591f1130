/**
 * The release dry run's steps, importable by tests: a scratch copy of the
 * workspace, `changeset version` in it, `pnpm pack` of every public package,
 * and the checks of what each tarball would publish.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { readTarball } from './tarball.mjs';
import { listPublicPackages, listWorkspacePackages } from './workspace-packages.mjs';

// The long steps (copying every package, `changeset version`, `pnpm pack`) are asynchronous: the
// test that runs them must keep its vitest worker answering (event-loop-watch.ts).
const execFileAsync = promisify(execFile);

const DEPENDENCY_FIELDS = ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies'];

/**
 * Copies what `changeset version` and `pnpm pack` read into a new temporary
 * directory: the root manifest, pnpm-workspace.yaml, `.changeset/`, and every
 * workspace package without its node_modules. Workspace dependencies are
 * linked again inside the copy (pnpm pack reads their versions from
 * node_modules to rewrite `workspace:` specifiers). The caller deletes it.
 * @returns {Promise<string>} the copy's root
 */
export async function createScratchCopy(root) {
  const scratch = mkdtempSync(join(tmpdir(), 'dstack-release-'));
  for (const file of ['package.json', 'pnpm-workspace.yaml']) cpSync(join(root, file), join(scratch, file));
  cpSync(join(root, '.changeset'), join(scratch, '.changeset'), { recursive: true });
  const packages = listWorkspacePackages(root);
  const packagesByName = new Map(packages.map((pkg) => [pkg.name, pkg]));
  for (const pkg of packages) {
    await cp(pkg.dir, join(scratch, pkg.relativeDir), {
      recursive: true,
      filter: (source) => {
        const name = basename(source);
        return name !== 'node_modules' && name !== '.turbo';
      },
    });
  }
  for (const pkg of packages) {
    const linked = new Set(
      DEPENDENCY_FIELDS.flatMap((field) => Object.keys(pkg.manifest[field] ?? {})).filter((dep) =>
        packagesByName.has(dep),
      ),
    );
    for (const dep of linked) {
      const target = packagesByName.get(dep);
      const link = join(scratch, pkg.relativeDir, 'node_modules', dep);
      mkdirSync(dirname(link), { recursive: true });
      symlinkSync(relative(dirname(link), join(scratch, target.relativeDir)), link, 'dir');
    }
  }
  return scratch;
}

/**
 * The bumps the pending changesets ask for, by package: the front matter of
 * every `.changeset/*.md` (`"@dstack/core": minor`), the largest bump winning.
 * @returns {Map<string, 'major' | 'minor' | 'patch'>}
 */
export function readRequestedBumps(root) {
  const order = ['patch', 'minor', 'major'];
  const requested = new Map();
  const dir = join(root, '.changeset');
  for (const file of readdirSync(dir)) {
    if (!file.endsWith('.md') || file === 'README.md') continue;
    const frontMatter = /^---\r?\n([\s\S]*?)\r?\n---/.exec(readFileSync(join(dir, file), 'utf8'))?.[1] ?? '';
    for (const line of frontMatter.split(/\r?\n/)) {
      const entry = /^\s*['"]?([^'":]+)['"]?\s*:\s*(major|minor|patch)\s*$/.exec(line);
      if (!entry) continue;
      const [, name, bump] = entry;
      const current = requested.get(name);
      if (current === undefined || order.indexOf(bump) > order.indexOf(current)) requested.set(name, bump);
    }
  }
  return requested;
}

function bumpType(from, to) {
  const [a, b] = [from, to].map((version) => version.split(/[.-]/).map(Number));
  if (b[0] !== a[0]) return 'major';
  if (b[1] !== a[1]) return 'minor';
  return 'patch';
}

/**
 * @typedef {object} VersionBump
 * @property {string} name
 * @property {string} from
 * @property {string} to
 * @property {'major' | 'minor' | 'patch'} type
 * @property {boolean} requested whether a changeset names the package (else a dependent bump)
 */

/**
 * Runs `changeset version` in `scratch` (with the root's changesets CLI) and
 * returns every public package whose version changed.
 * @returns {Promise<VersionBump[]>}
 */
export async function versionPackages(root, scratch) {
  const before = new Map(listPublicPackages(scratch).map((pkg) => [pkg.name, pkg.manifest.version]));
  const requested = readRequestedBumps(scratch);
  const changeset = join(root, 'node_modules', '.bin', 'changeset');
  await execFileAsync(changeset, ['version'], { cwd: scratch, env: { ...process.env, CI: '1' } });
  return listPublicPackages(scratch)
    .filter((pkg) => before.get(pkg.name) !== pkg.manifest.version)
    .map((pkg) => {
      const from = before.get(pkg.name);
      const to = pkg.manifest.version;
      return { name: pkg.name, from, to, type: bumpType(from, to), requested: requested.has(pkg.name) };
    });
}

/**
 * Bumps that must not happen by accident: a 0.x package reaching 1.0.0 (a
 * stability promise) without a changeset asking for a major. Changesets does
 * this when a package's peer dependency range no longer holds the peer's new
 * version, and in 0.x a caret range (`workspace:^` → `^0.1.0`) excludes the
 * next minor, so one core minor would make every backend 1.0.0.
 * @returns {string[]} problems, empty when none
 */
export function checkVersionBumps(bumps, requestedBumps, packages) {
  const problems = [];
  for (const bump of bumps) {
    if (!bump.from.startsWith('0.') || bump.to.startsWith('0.')) continue;
    if (requestedBumps.get(bump.name) === 'major') continue;
    const pkg = packages.find((candidate) => candidate.name === bump.name);
    const bumpedPeers = Object.entries(pkg?.manifest.peerDependencies ?? {})
      .filter(([peer]) => bumps.some((other) => other.name === peer))
      .map(([peer, range]) => `${peer} "${range}"`);
    problems.push(
      `${bump.name} would go from ${bump.from} to ${bump.to}, but no changeset asks for a major: ` +
        `its peer dependency range${bumpedPeers.length === 1 ? '' : 's'} ${bumpedPeers.join(', ') || '(none found)'} ` +
        'would not hold the peer’s next version. Widen the peer range (e.g. "workspace:>=0.1.0 <1.0.0") ' +
        'or add a changeset that asks for the major on purpose.',
    );
  }
  return problems;
}

/**
 * @typedef {object} PackedPackage
 * @property {string} name
 * @property {string} version
 * @property {string} tarball absolute path of the .tgz
 * @property {string[]} files paths inside the tarball (without `package/`), sorted
 * @property {Record<string, unknown>} manifest the packed package.json
 */

/**
 * `pnpm pack` of the package in `packageDir` into `destination`; reads the
 * tarball back for its real file list and manifest.
 * @returns {Promise<PackedPackage>}
 */
export async function packPackage(packageDir, destination) {
  mkdirSync(destination, { recursive: true });
  const { stdout: output } = await execFileAsync(
    'pnpm',
    ['pack', '--pack-destination', destination, '--json'],
    {
      cwd: packageDir,
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  const summary = JSON.parse(output.slice(output.indexOf('{')));
  const tarball = summary.filename.startsWith('/') ? summary.filename : join(destination, summary.filename);
  const entries = readTarball(tarball);
  const manifestEntry = entries.find((entry) => entry.path === 'package.json');
  if (!manifestEntry) throw new Error(`${tarball} has no package.json`);
  return {
    name: summary.name,
    version: summary.version,
    tarball,
    files: entries.map((entry) => entry.path).sort(),
    manifest: JSON.parse(manifestEntry.content.toString('utf8')),
  };
}

/** Files every published package has at its top, and the only top-level files besides a license. */
const REQUIRED_TOP_LEVEL_FILES = ['package.json', 'README.md', 'CHANGELOG.md'];
const LICENSE_FILE = /^LICEN[CS]E(\.md|\.txt)?$/i;
/** Runtime data read next to `dist` (the catalog's bundled price snapshot). */
const DATA_DIRECTORY = 'assets/';

/** Why `path` must not be published, or null when it may. */
export function whyNotPublishable(path) {
  if (REQUIRED_TOP_LEVEL_FILES.includes(path) || LICENSE_FILE.test(path)) return null;
  const segments = path.split('/');
  const fileName = segments.at(-1);
  if (!path.startsWith('dist/') && !path.startsWith(DATA_DIRECTORY)) {
    return 'outside dist/ (only package.json, dist/**, README.md, CHANGELOG.md and LICENSE are published)';
  }
  if (segments.some((segment) => ['__fixtures__', '__tests__', '__mocks__'].includes(segment))) {
    return 'a test fixture';
  }
  // Test tooling is not published: shared tooling lives in the private @dstack/testing, a package's
  // own test helpers are named `*.test.helpers.ts` (excluded with the tests).
  if (segments.slice(0, -1).includes('testing')) return 'test tooling (move it to @dstack/testing)';
  // `x.test.js`, and helpers named `x.test-helper.js` or `x.test.helpers.js`.
  if (/\.(test|spec)[.-]/.test(fileName)) return 'a test file';
  if (fileName.endsWith('.tsbuildinfo')) return 'TypeScript build state';
  if (fileName.startsWith('.')) return 'a dotfile';
  return null;
}

/** Every string under `value` with its JSON path. */
function* strings(value, path = []) {
  if (typeof value === 'string') yield { path, value };
  else if (Array.isArray(value))
    for (const [index, item] of value.entries()) yield* strings(item, [...path, index]);
  else if (value && typeof value === 'object')
    for (const [key, item] of Object.entries(value)) yield* strings(item, [...path, key]);
}

/** The files a manifest points at: main, types, bin and every exports target. */
function entryPoints(manifest) {
  const targets = [];
  for (const field of ['main', 'types', 'module'])
    if (typeof manifest[field] === 'string') targets.push(manifest[field]);
  if (typeof manifest.bin === 'string') targets.push(manifest.bin);
  else targets.push(...Object.values(manifest.bin ?? {}));
  for (const { value } of strings(manifest.exports ?? {})) targets.push(value);
  return [...new Set(targets.map((target) => target.replace(/^\.\//, '')))];
}

/**
 * What is wrong with a packed package, empty when it may be published: files
 * outside the allowed set, a missing README or CHANGELOG, specifiers pnpm did
 * not rewrite (`workspace:`, `catalog:`), a `source` export condition (it
 * points at unpublished sources), entry points missing from the tarball.
 * @param {PackedPackage} packed
 * @returns {string[]}
 */
export function checkPackedPackage(packed) {
  const problems = [];
  for (const file of packed.files) {
    const reason = whyNotPublishable(file);
    if (reason) problems.push(`publishes ${file}: ${reason}; exclude it in "files"`);
  }
  for (const required of REQUIRED_TOP_LEVEL_FILES) {
    if (!packed.files.includes(required)) problems.push(`lacks ${required}`);
  }
  for (const { path, value } of strings(packed.manifest)) {
    if (/^(workspace|catalog):/.test(value)) {
      problems.push(`package.json ${path.join('.')} is still "${value}" (pnpm pack must rewrite it)`);
    }
  }
  for (const { path } of strings(packed.manifest.exports ?? {})) {
    if (path.includes('source')) problems.push(`package.json exports.${path.join('.')} points at sources`);
  }
  for (const target of entryPoints(packed.manifest)) {
    if (!target.includes('*') && !packed.files.includes(target)) {
      problems.push(`package.json points at ${target}, which is not in the tarball`);
    }
  }
  return problems;
}

/**
 * Packs every public package of `root` into `destination` and checks each.
 * @returns {Promise<{ packed: PackedPackage, problems: string[] }[]>}
 */
export async function packAndCheckPublicPackages(root, destination) {
  const results = [];
  // One at a time: each pack is a pnpm process of its own.
  for (const pkg of listPublicPackages(root)) {
    const packed = await packPackage(pkg.dir, destination);
    results.push({ packed, problems: checkPackedPackage(packed) });
  }
  return results;
}

/** The names of the public packages not built yet (no dist/ to pack). */
export function findUnbuiltPackages(root) {
  return listPublicPackages(root)
    .filter((pkg) => !existsSync(join(pkg.dir, 'dist')))
    .map((pkg) => pkg.name);
}
