/**
 * The images emulated hosts boot from, built on this machine from the Debian root filesystem every
 * test image starts from (`debian-rootfs/build-debian-rootfs.sh`, one debootstrap per machine):
 * `plain` for the images without Docker (Canonical's Ubuntu), `docker` for those with a Docker
 * daemon and nothing pulled (AWS's Deep Learning AMI, Lambda's and Verda's images), both by
 * `emulator-host-image/build-host-image.sh`; and `dstack` for dstack's own VM images, which are
 * `docker` with dstack's base image pre-pulled, as dstack's Packer builds make them
 * (`emulator-host-image/build-dstack-host-image.sh`). The builds are idempotent: they rebuild only
 * when the image is missing or was built from other inputs, so running one before the first
 * launch of a process costs one image inspect.
 *
 * The default tag is the inputs' own hash: checkouts with other scripts (branches, worktrees)
 * that share one Docker daemon each get their image, instead of rebuilding one tag under each
 * other's running tests.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defaultJobImage } from '@dstack/core/agent-protocol';
import { baseImageStandIn, ensureBaseImageStandIn } from './base-image-stand-in.js';
import { DEBIAN_ROOTFS_SCRIPTS } from './debian-rootfs-scripts.js';
import { runImageBuildScript } from './image-build-script.js';
import { availableCapabilities } from './linux-capabilities.js';

export { DEBIAN_ROOTFS_SCRIPTS } from './debian-rootfs-scripts.js';

/** The build scripts, beside `src` and `dist` (both three levels below the package root). */
export const BUILD_HOST_IMAGE_SCRIPT = fileURLToPath(
  new URL('../../../emulator-host-image/build-host-image.sh', import.meta.url),
);
const BUILD_DSTACK_HOST_IMAGE_SCRIPT = fileURLToPath(
  new URL('../../../emulator-host-image/build-dstack-host-image.sh', import.meta.url),
);
const BOOT_SCRIPT = fileURLToPath(
  new URL('../../../emulator-host-image/emulated-host-boot.sh', import.meta.url),
);

/**
 * What an emulated host's image has: no Docker (`plain`), a Docker daemon that starts at boot
 * (`docker`), or that daemon with dstack's base image already in its store (`dstack`).
 */
export type EmulatedHostKind = 'docker' | 'plain' | 'dstack';
export const EMULATED_HOST_KINDS: readonly EmulatedHostKind[] = ['docker', 'plain', 'dstack'];

/** Whether hosts of `kind` run a Docker daemon (and so need what Docker in Docker needs). */
export function hasDockerDaemon(kind: EmulatedHostKind): boolean {
  return kind !== 'plain';
}

const BUILD_HASH = createHash('sha256')
  .update(readFileSync(BUILD_HOST_IMAGE_SCRIPT))
  .update(readFileSync(BOOT_SCRIPT))
  .update(Buffer.concat(DEBIAN_ROOTFS_SCRIPTS.map((script) => readFileSync(script))))
  .digest('hex')
  .slice(0, 16);

/** The `dstack` image's hash: the `docker` image's, its own script's, and the pre-pulled image's. */
function dstackBuildHash(): string {
  return createHash('sha256')
    .update(BUILD_HASH)
    .update(readFileSync(BUILD_DSTACK_HOST_IMAGE_SCRIPT))
    .update(`${baseImageStandIn()} as ${defaultJobImage()}`)
    .digest('hex')
    .slice(0, 16);
}

/** The image's default name, tagged with the build's hash. Env of the build scripts: DSTACK_EMULATED_HOST_IMAGE. */
export function emulatedHostImage(kind: EmulatedHostKind): string {
  return `dstack-test/emulated-host-${kind}:${kind === 'dstack' ? dstackBuildHash() : BUILD_HASH}`;
}

/**
 * What `docker run` needs to run a Docker daemon in a container (Docker in Docker): every
 * capability this machine has (`--privileged` asks for ones a sandbox may lack), no seccomp or
 * AppArmor profile, every device. /var/lib/docker must be a volume besides (overlay2 cannot stack
 * on the container's own overlay).
 */
export async function dockerDaemonRunOptions(): Promise<string[]> {
  return [
    '--cap-add',
    'ALL',
    ...(await availableCapabilities()).missing.flatMap((capability) => ['--cap-drop', capability]),
    '--security-opt',
    'seccomp=unconfined',
    '--security-opt',
    'apparmor=unconfined',
    '--security-opt',
    'systempaths=unconfined',
    '--device-cgroup-rule',
    'a *:* rwm',
  ];
}

/** debootstrap downloads Debian's packages on a machine's first build. */
const BUILD_TIMEOUT_MS = 600_000;
const builds = new Map<string, Promise<void>>();

async function buildImage(kind: EmulatedHostKind, image: string, force: boolean): Promise<void> {
  if (kind === 'dstack') return buildDstackImage(image, force);
  await runImageBuildScript(
    `the emulated host image ${image}`,
    [BUILD_HOST_IMAGE_SCRIPT, '--kind', kind, ...(force ? ['--force'] : [])],
    { env: { ...process.env, DSTACK_EMULATED_HOST_IMAGE: image }, timeoutMs: BUILD_TIMEOUT_MS },
  );
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

/** The `docker` image with the stand-in of dstack's base image in its store, under dstack's name. */
async function buildDstackImage(image: string, force: boolean): Promise<void> {
  await ensureEmulatedHostImage('docker');
  const standIn = await ensureBaseImageStandIn();
  const args = [
    BUILD_DSTACK_HOST_IMAGE_SCRIPT,
    '--from',
    emulatedHostImage('docker'),
    '--base-image',
    standIn,
    '--as',
    defaultJobImage(),
    ...(force ? ['--force'] : []),
    '--',
    ...(await dockerDaemonRunOptions()),
  ];
  await runImageBuildScript(`the emulated host image ${image}`, args, {
    env: {
      ...process.env,
      DSTACK_EMULATED_HOST_IMAGE: image,
      DSTACK_EMULATED_HOST_BUILD: dstackBuildHash(),
    },
    timeoutMs: BUILD_TIMEOUT_MS,
  });
}
