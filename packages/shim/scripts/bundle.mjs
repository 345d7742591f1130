// Bundles the shim command into one ESM file with no imports outside node built-ins, so the
// server can copy it to an SSH fleet host as a single file and start it with that host's node,
// and a VM can run it from the package's tarball. Both runtimes are in the bundle; the Docker
// runtime puts the runner's own bundle into containers, so a copy of it sits next to the shim's
// (`--runner-bundle`): the tarball then carries everything a VM needs.
import { copyFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';
import { nodeCommandBundle } from '../../../scripts/lib/node-bundle.mjs';

await build(nodeCommandBundle('src/bin/dstack-shim.ts', 'dist/dstack-shim.bundle.mjs'));
// The gateway agent: what a gateway instance runs from the same agent runtime.
await build(nodeCommandBundle('src/bin/dstack-gateway.ts', 'dist/dstack-gateway.bundle.mjs'));

const runnerPackage = dirname(createRequire(import.meta.url).resolve('@dstack/runner/package.json'));
await copyFile(join(runnerPackage, 'dist/dstack-runner.bundle.mjs'), 'dist/dstack-runner.bundle.mjs');
