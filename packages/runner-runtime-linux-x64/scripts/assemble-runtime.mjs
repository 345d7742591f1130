#!/usr/bin/env node
/**
 * Assembles `dist/dstack-runtime`: the runner's portable runtime (this machine's node with its own
 * loader and libraries, and the runner bundle of the built @dstack/runner), which this package
 * publishes. A container backend's entrypoint downloads the package's npm tarball and starts the
 * runner from `package/dist/dstack-runtime` in any x86_64 image. Only a linux x86_64 machine can
 * assemble it; elsewhere the build says so and leaves `dist` without the runtime, so publishing
 * from the wrong machine fails (`prepublishOnly`).
 */
import { mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildPortableRuntime } from '@dstack/runner';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
const target = join(dist, 'dstack-runtime');

await rm(dist, { recursive: true, force: true });
await mkdir(dist, { recursive: true });
if (process.platform !== 'linux' || process.arch !== 'x64') {
  console.warn(`@dstack/runner-runtime-linux-x64: not assembled on ${process.platform}-${process.arch}`);
} else {
  const runtime = await buildPortableRuntime(target);
  console.log(
    `@dstack/runner-runtime-linux-x64: node ${runtime.manifest.node_version}, loader ${runtime.manifest.loader}`,
  );
}
