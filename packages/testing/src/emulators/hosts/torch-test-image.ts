/**
 * The image of the multi-node PyTorch test: Debian bookworm's python3 (3.11) with PyTorch's CPU
 * build, installed offline from wheels on this machine by `torch-image/build-torch-image.sh` on
 * the Debian root filesystem the emulated hosts' images start from (nothing can be installed from PyPI here). Tagged with the hash of the script and the wheel, as
 * the emulated host images are, so a machine builds it once, and checkouts with another script or
 * wheel get their own.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildOnce } from './build-once.js';
import { DEBIAN_ROOTFS_SCRIPTS } from './debian-rootfs-scripts.js';
import { runImageBuildScript } from './image-build-script.js';

/** The build script, beside `src` and `dist` (both three levels below the package root). */
export const BUILD_TORCH_IMAGE_SCRIPT = fileURLToPath(
  new URL('../../../torch-image/build-torch-image.sh', import.meta.url),
);

/** Where this machine keeps PyTorch's CPU wheel; env DSTACK_TORCH_WHEEL names another. */
const WHEELS_DIR = '/opt/wheels';
/** The wheels of torch's dependencies and pip's; env DSTACK_TORCH_DEPENDENCY_WHEELS names another folder. */
const DEFAULT_DEPENDENCY_WHEELS = '/opt/pypi/files';

/** The CPU wheel for CPython 3.11 (bookworm's python3): DSTACK_TORCH_WHEEL, or the one in /opt/wheels. */
export function torchWheel(): string | null {
  const given = process.env.DSTACK_TORCH_WHEEL;
  if (given) return existsSync(given) ? given : null;
  if (!existsSync(WHEELS_DIR)) return null;
  const found = readdirSync(WHEELS_DIR)
    .filter((name) => /^torch-[^-]+\+cpu-cp311-cp311-.*\.whl$/.test(name))
    .sort();
  return found[0] ? join(WHEELS_DIR, found[0]) : null;
}

function dependencyWheels(): string {
  return process.env.DSTACK_TORCH_DEPENDENCY_WHEELS || DEFAULT_DEPENDENCY_WHEELS;
}

/** Why the image cannot be built on this machine, or null when it can. */
export function torchTestImageMissing(): string | null {
  if (torchWheel() === null) {
    return `no PyTorch CPU wheel for Python 3.11 (${process.env.DSTACK_TORCH_WHEEL || `${WHEELS_DIR}/torch-*+cpu-cp311-*.whl`}; set DSTACK_TORCH_WHEEL)`;
  }
  if (!existsSync(dependencyWheels())) {
    return `no folder of torch's dependency wheels at ${dependencyWheels()} (set DSTACK_TORCH_DEPENDENCY_WHEELS)`;
  }
  return null;
}

/** The image's name, tagged with the build's hash (the script's, computed the same way). */
export function torchTestImage(): string {
  const wheel = torchWheel();
  if (wheel === null) throw new Error(`cannot name the torch test image: ${torchTestImageMissing()}`);
  const hash = createHash('sha256')
    .update(readFileSync(BUILD_TORCH_IMAGE_SCRIPT))
    .update(Buffer.concat(DEBIAN_ROOTFS_SCRIPTS.map((script) => readFileSync(script))))
    .update(`${basename(wheel)} ${statSync(wheel).size}\n`)
    .digest('hex')
    .slice(0, 16);
  return `dstack-test/python-torch:${hash}`;
}

/** debootstrap downloads Debian's packages on a machine's first build; the wheels are 200 MB. */
const BUILD_TIMEOUT_MS = 900_000;

/**
 * Builds the image when it is missing or stale (the script leaves a current one alone; once per
 * process) and resolves with its name. Needs a running Docker daemon, debootstrap and the wheels.
 */
export const ensureTorchTestImage: () => Promise<string> = buildOnce(buildTorchTestImage);

async function buildTorchTestImage(): Promise<string> {
  const missing = torchTestImageMissing();
  if (missing !== null) throw new Error(`cannot build the torch test image: ${missing}`);
  const image = torchTestImage();
  await runImageBuildScript(`the torch test image ${image}`, [BUILD_TORCH_IMAGE_SCRIPT], {
    env: {
      ...process.env,
      DSTACK_TORCH_WHEEL: torchWheel() ?? '',
      DSTACK_TORCH_DEPENDENCY_WHEELS: dependencyWheels(),
      DSTACK_TORCH_TEST_IMAGE: image,
    },
    timeoutMs: BUILD_TIMEOUT_MS,
  });
  return image;
}
