/**
 * The images emulated hosts boot from, built on this machine by
 * `emulator-host-image/build-host-image.sh` from the Debian root filesystem every test image
 * starts from (`debian-rootfs/build-debian-rootfs.sh`, one debootstrap per machine): `docker`
 * for the images with a Docker daemon (dstack's VM images, AWS's Deep Learning AMI), `plain` for
 * those without (Canonical's Ubuntu). The script is idempotent: it rebuilds only when the image is
 * missing or was built from other scripts, so running it before the first launch of a process
 * costs one image inspect.
 *
 * The default tag is the scripts' own hash: checkouts with other scripts (branches, worktrees)
 * that share one Docker daemon each get their image, instead of rebuilding one tag under each
 * other's running tests.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The build script, beside `src` and `dist` (both three levels below the package root). */
export const BUILD_HOST_IMAGE_SCRIPT = fileURLToPath(
  new URL('../../../emulator-host-image/build-host-image.sh', import.meta.url),
);
const BOOT_SCRIPT = fileURLToPath(
  new URL('../../../emulator-host-image/emulated-host-boot.sh', import.meta.url),
);
/**
 * The one Debian root filesystem every test image starts from (one debootstrap per machine), and
 * the script that trims a copy to an image's packages: part of every Debian image's build hash.
 */
export const DEBIAN_ROOTFS_SCRIPTS = ['build-debian-rootfs.sh', 'keep-only-packages.sh'].map((name) =>
  fileURLToPath(new URL(`../../../debian-rootfs/${name}`, import.meta.url)),
);

/** What an emulated host's image has: a Docker daemon that starts at boot, or not. */
export type EmulatedHostKind = 'docker' | 'plain';
export const EMULATED_HOST_KINDS: readonly EmulatedHostKind[] = ['docker', 'plain'];

const BUILD_HASH = createHash('sha256')
  .update(readFileSync(BUILD_HOST_IMAGE_SCRIPT))
  .update(readFileSync(BOOT_SCRIPT))
  .update(Buffer.concat(DEBIAN_ROOTFS_SCRIPTS.map((script) => readFileSync(script))))
  .digest('hex')
  .slice(0, 16);

/** The image's default name, tagged with the build's hash. Env of the build script: DSTACK_EMULATED_HOST_IMAGE. */
export function emulatedHostImage(kind: EmulatedHostKind): string {
  return `dstack-test/emulated-host-${kind}:${BUILD_HASH}`;
}

/** debootstrap downloads Debian's packages on a machine's first build. */
const BUILD_TIMEOUT_MS = 600_000;
const builds = new Map<string, Promise<void>>();

async function buildImage(kind: EmulatedHostKind, image: string, force: boolean): Promise<void> {
  try {
    await run('bash', [BUILD_HOST_IMAGE_SCRIPT, '--kind', kind, ...(force ? ['--force'] : [])], {
      env: { ...process.env, DSTACK_EMULATED_HOST_IMAGE: image },
      timeout: BUILD_TIMEOUT_MS,
    });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(
      `building the emulated host image ${image} failed: ${stderr || (error as Error).message}`,
      {
        cause: error,
      },
    );
  }
}

/**
 * Builds the emulated host image of `kind` when it is missing or stale (once per process and
 * image; `force` rebuilds regardless). Needs a running Docker daemon and debootstrap.
 */
export function ensureEmulatedHostImage(
  kind: EmulatedHostKind,
  options: { image?: string; force?: boolean } = {},
): Promise<void> {
  const image = options.image ?? emulatedHostImage(kind);
  if (options.force) {
    const forced = buildImage(kind, image, true);
    builds.set(image, forced);
    return forced;
  }
  let build = builds.get(image);
  if (build === undefined) {
    build = buildImage(kind, image, false);
    // A failed build is retried by the next caller rather than remembered.
    build.catch(() => builds.delete(image));
    builds.set(image, build);
  }
  return build;
}
