/**
 * vitest's `globalSetup` (root vitest.config.ts): builds the Docker images the run's tests start
 * containers from, once, before any worker starts, so that no test waits on a build inside its
 * timeout and no two workers build the same image. The images: the runner's busybox and musl
 * images (shim/test-image), the emulated cloud hosts' (`docker`, `plain`, and `dstack`: `docker`
 * with the stand-in of dstack's base image pre-pulled, as in dstack's VM images), the torch image
 * and the stand-in of dstack's base image, all but the runner's from one Debian root filesystem
 * (debian-rootfs/build-debian-rootfs.sh, one debootstrap per machine, kept by the hash of its
 * script). Every build leaves a current image
 * alone, so a machine that built them pays one `docker image inspect` each. The torch image's
 * layers are gzipped here too, once per image (compressed-image-push.ts), for its test's push, and
 * the agent runtime the emulated hosts download is packed once (served-file.ts).
 *
 * Only the images the run's files use are built (a run of one unit test builds none): a file
 * uses an image when it, or a module it imports by a relative path, names the image's helper.
 * The tests keep their own `ensure…` calls, which find the images built here.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import { AGENT_RUNTIME_PACKAGE } from '../emulators/hosts/agent-runtime-server.js';
import { ensureBaseImageStandIn } from '../emulators/hosts/base-image-stand-in.js';
import { compressedImage } from '../emulators/hosts/compressed-image-push.js';
import { EMULATED_HOST_KINDS, ensureEmulatedHostImage } from '../emulators/hosts/emulated-host-image.js';
import { ensureRunnerTestImages } from '../emulators/hosts/runner-test-images.js';
import { packWorkspacePackage } from '../emulators/hosts/served-file.js';
import { ensureTorchTestImage, torchTestImageMissing } from '../emulators/hosts/torch-test-image.js';

const run = promisify(execFile);

export type TestImage = 'runner' | 'emulated-hosts' | 'torch' | 'base';

/** The names in a test's sources that say it starts containers of an image. */
const USES: Record<TestImage, RegExp> = {
  runner: /\b(ensureRunnerTestImages|RUNNER_(BUSYBOX|MUSL)_TEST_IMAGE)\b|build-test-image\.sh/,
  'emulated-hosts': /\b(ensureEmulatedHostImage|DockerEmulatedHosts)\b/,
  torch: /\bensureTorchTestImage\b/,
  base: /\b(serveDefaultImages|ensureBaseImageStandIn)\b/,
};

/** How deep relative imports are followed: a test, its scenario module, that module's helpers. */
const IMPORT_DEPTH = 3;
const RELATIVE_IMPORT = /\bfrom\s+'(\.{1,2}\/[^']+)'/g;
/**
 * This module's source, which names every helper above: its own tests use no image. (Tests load
 * the module from its build, `dist/…js`; the files it reads are sources.)
 */
const THIS_MODULE = fileURLToPath(import.meta.url).replace(/\/dist\/(.*)\.js$/, '/src/$1.ts');

/** The images the test files at `paths` use, reading them and what they import by relative paths. */
export function testImagesUsedBy(paths: readonly string[]): Set<TestImage> {
  const used = new Set<TestImage>();
  const read = new Set<string>();
  const visit = (path: string, depth: number) => {
    if (read.has(path) || path === THIS_MODULE || !existsSync(path)) return;
    read.add(path);
    const source = readFileSync(path, 'utf8');
    for (const [image, pattern] of Object.entries(USES) as [TestImage, RegExp][]) {
      if (pattern.test(source)) used.add(image);
    }
    if (depth === IMPORT_DEPTH) return;
    for (const [, specifier] of source.matchAll(RELATIVE_IMPORT)) {
      // Sources import TypeScript modules by their `.js` name.
      const imported = resolve(dirname(path), specifier!.replace(/\.js$/, '.ts'));
      // A package's barrel imports everything: following it would make every file use every image.
      if (!imported.endsWith('/index.ts')) visit(imported, depth + 1);
    }
  };
  for (const path of paths) visit(path, 0);
  return used;
}

async function dockerAnswers(): Promise<boolean> {
  try {
    await run('docker', ['info'], { timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
}

async function commandExists(command: string): Promise<boolean> {
  try {
    await run('sh', ['-c', `command -v ${command}`]);
    return true;
  } catch {
    return false;
  }
}

/** Builds what the run needs; where a machine cannot build an image, its tests say why (or skip). */
export async function buildTestImages(paths: readonly string[], log: (line: string) => void): Promise<void> {
  const used = testImagesUsedBy(paths);
  if (used.size === 0) return;
  if (!(await dockerAnswers())) {
    log('test images: Docker does not answer, no image built (the tests that need one say so)');
    return;
  }
  const build = async (name: string, step: () => Promise<unknown>) => {
    const started = performance.now();
    await step();
    log(`test images: ${name} ready in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  };
  if (used.has('runner')) await build('runner busybox and musl', ensureRunnerTestImages);
  const debootstrap = await commandExists('debootstrap');
  if (!debootstrap && (used.has('emulated-hosts') || used.has('torch') || used.has('base'))) {
    log('test images: debootstrap is missing, no Debian image built (apt-get install debootstrap)');
    return;
  }
  // Independent builds run side by side (each script holds its own lock, the Debian root
  // filesystem's too): on a fresh machine the torch image alone takes minutes.
  const builds: Array<Promise<void>> = [];
  if (used.has('emulated-hosts')) {
    // `dstack` waits for the `docker` image it starts from.
    for (const kind of EMULATED_HOST_KINDS) {
      builds.push(build(`emulated host (${kind})`, () => ensureEmulatedHostImage(kind)));
    }
    // What the hosts download, packed once for every file that serves it.
    builds.push(build('agent runtime tarball', () => packWorkspacePackage(AGENT_RUNTIME_PACKAGE)));
  }
  if (used.has('base')) builds.push(build("dstack's base image stand-in", ensureBaseImageStandIn));
  if (used.has('torch')) {
    const missing = torchTestImageMissing();
    if (missing === null) {
      // Its layers gzipped too (a few minutes the first time on a machine): the test pushes them as they are.
      builds.push(build('torch', async () => compressedImage(await ensureTorchTestImage())));
    } else log(`test images: no torch image: ${missing}`);
  }
  await Promise.all(builds);
}

/** The paths of the run's test files (vitest collects them before the global setups run). */
function runPaths(project: TestProject): string[] {
  const state = (project.vitest as unknown as { state?: { getPaths?: () => string[] } }).state;
  return state?.getPaths?.() ?? [];
}

export default async function setup(project: TestProject): Promise<void> {
  await buildTestImages(runPaths(project), (line) => project.vitest.logger.log(line));
}
