#!/usr/bin/env node
/**
 * Assembles `dist/dstack-runtime`, the agent runtime this package publishes: the runner's portable
 * runtime (this machine's node with its own loader and libraries, and the runner bundle of the
 * built @dstack/runner) with the shim's bundle beside it (`shim.mjs`, of the built @dstack/shim) and
 * the gateway agent's (`gateway.mjs`, which gateway instances start).
 * A container backend's entrypoint downloads the package's npm tarball and starts the runner from
 * `package/dist/dstack-runtime` in any x86_64 image; a VM's bootstrap and an SSH fleet's deploy
 * start the shim from it the same way, so a host needs no node of its own. Only a linux x86_64 machine can
 * assemble it; elsewhere the build says so and leaves `dist` without the runtime, so publishing
 * from the wrong machine fails (`prepublishOnly`).
 */
import { copyFile, mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENT_RUNTIME_GATEWAY_FILE, AGENT_RUNTIME_SHIM_FILE } from '@dstack/core';
import { buildPortableRuntime } from '@dstack/runner';
import { GATEWAY_BUNDLE_PATH, SHIM_BUNDLE_PATH } from '@dstack/shim';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');
const target = join(dist, 'dstack-runtime');

await rm(dist, { recursive: true, force: true });
await mkdir(dist, { recursive: true });
if (process.platform !== 'linux' || process.arch !== 'x64') {
  console.warn(`@dstack/runner-runtime-linux-x64: not assembled on ${process.platform}-${process.arch}`);
} else {
  const runtime = await buildPortableRuntime(target);
  // Where core's VM bootstrap and the server's SSH deploy start the shim.
  await copyFile(SHIM_BUNDLE_PATH, join(target, AGENT_RUNTIME_SHIM_FILE));
  // Where a gateway instance's bootstrap starts the gateway agent.
  await copyFile(GATEWAY_BUNDLE_PATH, join(target, AGENT_RUNTIME_GATEWAY_FILE));
  console.log(
    `@dstack/runner-runtime-linux-x64: node ${runtime.manifest.node_version}, loader ${runtime.manifest.loader}`,
  );
}
