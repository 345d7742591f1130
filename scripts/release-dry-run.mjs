#!/usr/bin/env node
/**
 * What a release would do, without doing it: builds every package (turbo),
 * runs `changeset version` in a scratch copy of the workspace (the work tree
 * is not touched) and prints each version bump, then packs every public
 * package there and prints what each would publish. Exits 1 when a package
 * would publish anything besides package.json, dist/**, README.md,
 * CHANGELOG.md (and LICENSE), lacks its README or CHANGELOG, keeps a
 * `workspace:`/`catalog:` specifier, or when a 0.x package would become 1.0.0
 * without a changeset asking for it.
 *
 *   pnpm release:dry-run [--skip-build]
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  checkVersionBumps,
  createScratchCopy,
  packAndCheckPublicPackages,
  readRequestedBumps,
  versionPackages,
} from './lib/release-check.mjs';
import { listPublicPackages } from './lib/workspace-packages.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

if (!process.argv.includes('--skip-build')) {
  console.log('Building every package (turbo run build)…');
  execFileSync('pnpm', ['exec', 'turbo', 'run', 'build', '--output-logs=errors-only'], {
    cwd: root,
    stdio: 'inherit',
  });
}

const scratch = await createScratchCopy(root);
let failed = false;
try {
  const requested = readRequestedBumps(scratch);
  const bumps = await versionPackages(root, scratch);
  console.log(`\nVersion bumps (changeset version in ${scratch}):`);
  if (bumps.length === 0) console.log('  none: no pending changesets');
  const width = Math.max(0, ...bumps.map((bump) => bump.name.length));
  for (const bump of bumps) {
    const why = bump.requested ? '' : '  (a dependency changed)';
    console.log(`  ${bump.name.padEnd(width)}  ${bump.from} → ${bump.to}  ${bump.type}${why}`);
  }
  const versionProblems = checkVersionBumps(bumps, requested, listPublicPackages(scratch));
  for (const problem of versionProblems) console.error(`  ✗ ${problem}`);
  failed ||= versionProblems.length > 0;

  const results = await packAndCheckPublicPackages(scratch, join(scratch, '.tarballs'));
  for (const { packed, problems } of results) {
    console.log(
      `\n${packed.name}@${packed.version}  ${basename(packed.tarball)}  (${packed.files.length} files)`,
    );
    for (const file of packed.files) console.log(`  ${file}`);
    for (const problem of problems) console.error(`  ✗ ${problem}`);
    failed ||= problems.length > 0;
  }
  console.log(
    failed
      ? '\nRelease dry run FAILED: fix the problems marked ✗ above.'
      : `\nRelease dry run OK: ${results.length} packages would be published.`,
  );
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
