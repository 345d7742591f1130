/**
 * The one Debian root filesystem every test image starts from (one debootstrap per machine), and
 * the script that trims a copy to an image's packages: part of every Debian image's build hash.
 */
import { fileURLToPath } from 'node:url';

/** Beside `src` and `dist` (both three levels below the package root). */
export const DEBIAN_ROOTFS_SCRIPTS = ['build-debian-rootfs.sh', 'keep-only-packages.sh'].map((name) =>
  fileURLToPath(new URL(`../../../debian-rootfs/${name}`, import.meta.url)),
);
