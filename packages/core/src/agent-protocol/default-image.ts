/**
 * The images a job runs in when its configuration names none, as dstack 0.21 names them
 * (`get_default_image` and `DSTACK_DIND_IMAGE` in dstack's server): its base image
 * `dstackai/base:{version}-{base|devel}-ubuntu{ubuntu}` (`devel`, with the CUDA compiler, for
 * `nvcc: true`), and `dstackai/dind` for `docker: true`. Python is not in the tag: the job's
 * commands make a venv of the configuration's `python:` with the image's `uv` (job-commands in
 * the server). The server's `DSTACK_DOCKER_BASE_IMAGE`, `DSTACK_DOCKER_BASE_IMAGE_VERSION`,
 * `DSTACK_DOCKER_BASE_IMAGE_UBUNTU_VERSION` and `DSTACK_DIND_IMAGE` (dstack's settings) point them
 * at a mirror or another build, e.g. `registry.internal:5000/dstackai/base`.
 */

/** dstack's base image repository (`DSTACK_DOCKER_BASE_IMAGE` when unset). */
export const DEFAULT_BASE_IMAGE = 'dstackai/base';
/** dstack 0.21's base image version (`DSTACK_DOCKER_BASE_IMAGE_VERSION` when unset). */
export const DEFAULT_BASE_IMAGE_VERSION = '0.15';
/** The Ubuntu of dstack 0.21's base image (`DSTACK_DOCKER_BASE_IMAGE_UBUNTU_VERSION` when unset). */
export const DEFAULT_BASE_IMAGE_UBUNTU_VERSION = '24.04';
/** dstack's Docker-in-Docker image for `docker: true` (`DSTACK_DIND_IMAGE` when unset). */
export const DEFAULT_DIND_IMAGE = 'dstackai/dind';
/**
 * The Python of the job's venv when the configuration names none. dstack takes its server's own
 * Python; this server has none, so it takes the one of dstack's server image (`python:3.11-slim`).
 */
export const DEFAULT_IMAGE_PYTHON = '3.11';

export interface DefaultImageOptions {
  /** The configuration's `nvcc:`: the `devel` variant, with the CUDA compiler. */
  nvcc?: boolean | null;
  /** The repository, with its registry: DEFAULT_BASE_IMAGE when absent. */
  baseImage?: string | null;
  /** The base image version: DEFAULT_BASE_IMAGE_VERSION when absent. */
  version?: string | null;
  /** The base image's Ubuntu: DEFAULT_BASE_IMAGE_UBUNTU_VERSION when absent. */
  ubuntuVersion?: string | null;
}

/** dstack's base image, e.g. `dstackai/base:0.15-base-ubuntu24.04` (`-devel-` with `nvcc`). */
export function defaultJobImage(options: DefaultImageOptions = {}): string {
  const repository = options.baseImage ?? DEFAULT_BASE_IMAGE;
  const version = options.version ?? DEFAULT_BASE_IMAGE_VERSION;
  const ubuntu = options.ubuntuVersion ?? DEFAULT_BASE_IMAGE_UBUNTU_VERSION;
  return `${repository}:${version}-${options.nvcc ? 'devel' : 'base'}-ubuntu${ubuntu}`;
}

/**
 * The image a job runs in when its configuration names none (dstack's repository and version).
 * A shim without containers (the process runtime) runs only default images, on its host.
 */
export const DEFAULT_JOB_IMAGE = defaultJobImage();

const DEFAULT_IMAGE_TAG = /^[A-Za-z0-9._]+-(base|devel)-ubuntu[0-9.]+$/;

/**
 * Whether `imageName` is dstack's base image: any variant, version or repository (a mirror's).
 * The shim does not know the server's settings, so the tag's shape is what tells.
 */
export function isDefaultJobImage(imageName: string): boolean {
  const colon = imageName.lastIndexOf(':');
  if (colon < 0 || colon < imageName.lastIndexOf('/') || imageName.includes('@')) return false;
  return DEFAULT_IMAGE_TAG.test(imageName.slice(colon + 1));
}
