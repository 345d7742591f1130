/**
 * The image a job runs in when its configuration names none: dstack's base image, one tag per
 * Python version (`dstackai/base:py{python}-{version}-cuda-12.1`, with `-devel` for the variant
 * that has the CUDA compiler). `python:` and `nvcc:` pick the tag; the
 * server's `DSTACK_BASE_IMAGE` / `DSTACK_BASE_IMAGE_VERSION` (dstack's settings) point it at a
 * mirror or another build, e.g. `registry.internal:5000/dstackai/base`.
 */

/** dstack's base image repository (`DSTACK_BASE_IMAGE` when unset). */
export const DEFAULT_BASE_IMAGE = 'dstackai/base';
/** dstack's base image version (`DSTACK_BASE_IMAGE_VERSION` when unset). */
export const DEFAULT_BASE_IMAGE_VERSION = '0.10';
/** The Python of the default image when the configuration names none. */
export const DEFAULT_IMAGE_PYTHON = '3.12';

export interface DefaultImageOptions {
  /** The configuration's `python:`; DEFAULT_IMAGE_PYTHON when absent. */
  python?: string | null;
  /** The configuration's `nvcc:`: the `-devel` variant, with the CUDA compiler. */
  nvcc?: boolean | null;
  /** The repository, with its registry: DEFAULT_BASE_IMAGE when absent. */
  baseImage?: string | null;
  /** The base image version: DEFAULT_BASE_IMAGE_VERSION when absent. */
  version?: string | null;
}

/** The default image for a Python version, e.g. `dstackai/base:py3.11-0.10-cuda-12.1(-devel)`. */
export function defaultJobImage(options: DefaultImageOptions = {}): string {
  const repository = options.baseImage ?? DEFAULT_BASE_IMAGE;
  const version = options.version ?? DEFAULT_BASE_IMAGE_VERSION;
  const python = options.python ?? DEFAULT_IMAGE_PYTHON;
  return `${repository}:py${python}-${version}-cuda-12.1${options.nvcc ? '-devel' : ''}`;
}

/**
 * The image a job runs in when its configuration names none (the default Python, dstack's
 * repository). A shim without containers (the process runtime) runs only default images.
 */
export const DEFAULT_JOB_IMAGE = defaultJobImage();

const DEFAULT_IMAGE_TAG = /^py3\.\d+-[A-Za-z0-9._]+-cuda-12\.1(-devel)?$/;

/**
 * Whether `imageName` is a default image: any Python, version or repository (a mirror's). The shim
 * does not know the server's settings, so the tag's shape is what tells.
 */
export function isDefaultJobImage(imageName: string): boolean {
  const colon = imageName.lastIndexOf(':');
  if (colon < 0 || colon < imageName.lastIndexOf('/') || imageName.includes('@')) return false;
  return DEFAULT_IMAGE_TAG.test(imageName.slice(colon + 1));
}
