/**
 * The test stand-in of dstack's base image (`dstackai/base:0.15-base-ubuntu24.04`), built on this
 * machine by `base-image/build-base-image.sh` from the Debian root filesystem every test image
 * starts from: bash, sudo, git, openssh, the `dstack` user, /dstack/run, Debian's python3 (3.11)
 * and a stand-in for `uv` that makes dstack's venv (no uv binary can be had here). Test registries
 * serve it under dstack's name (default-image-registry.ts). Tagged with the hash of its scripts,
 * as the emulated host images are, so a machine builds it once and checkouts with other scripts
 * get their own.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildOnce } from './build-once.js';
import { DEBIAN_ROOTFS_SCRIPTS } from './debian-rootfs-scripts.js';
import { runImageBuildScript } from './image-build-script.js';

/** The build script and the uv stand-in, beside `src` and `dist` (three levels below the package root). */
const BUILD_SCRIPT = fileURLToPath(new URL('../../../base-image/build-base-image.sh', import.meta.url));
const UV_STAND_IN = fileURLToPath(new URL('../../../base-image/uv', import.meta.url));

/** The Python of the stand-in (Debian bookworm's python3): what a test's `python:` may ask for. */
export const BASE_IMAGE_STAND_IN_PYTHON = '3.11';

/** The image's local name, tagged with the build's hash (the script's, computed the same way). */
export function baseImageStandIn(): string {
  const hash = createHash('sha256')
    .update(readFileSync(BUILD_SCRIPT))
    .update(Buffer.concat(DEBIAN_ROOTFS_SCRIPTS.map((script) => readFileSync(script))))
    .update(readFileSync(UV_STAND_IN))
    .digest('hex')
    .slice(0, 16);
  return `dstack-test/base:${hash}`;
}

/** debootstrap downloads Debian's packages on a machine's first build. */
const BUILD_TIMEOUT_MS = 900_000;

/**
 * Builds the image when it is missing or stale (the script leaves a current one alone; once per
 * process) and resolves with its name. Needs a running Docker daemon and debootstrap.
 */
export const ensureBaseImageStandIn: () => Promise<string> = buildOnce(buildBaseImageStandIn);

async function buildBaseImageStandIn(): Promise<string> {
  const image = baseImageStandIn();
  await runImageBuildScript(`the base image stand-in ${image}`, [BUILD_SCRIPT], {
    env: { ...process.env, DSTACK_BASE_IMAGE_STAND_IN: image },
    timeoutMs: BUILD_TIMEOUT_MS,
  });
  return image;
}
