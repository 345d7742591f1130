import { posix } from 'node:path';

/*
 * The portable runtime is a directory that runs the runner in any Linux image of its
 * architecture, whatever libc the image has or lacks (glibc, musl, a bare static busybox):
 *
 *   bin/node               the host's node binary, unchanged
 *   lib/<loader>           the host's dynamic loader (ld-linux-x86-64.so.2, ld-linux-aarch64.so.1, …)
 *   lib/<soname>           every shared library node loads on the host, under the name node asks for
 *   runner.mjs             the runner bundle
 *   dstack-runtime.json    the manifest
 *
 * It starts as `<root>/lib/<loader> --library-path <root>/lib <root>/bin/node <root>/runner.mjs …`:
 * the loader is run as a program, so the image's own loader, libc and `/etc/ld.so.cache` are
 * never involved, and `--library-path` replaces the image's `LD_LIBRARY_PATH` for node alone.
 * Nothing is set in the environment, so the processes the runner starts (the job's `/bin/sh`,
 * `tar`) load the image's libraries as they would without dstack.
 */

/** The manifest file at the root of a portable runtime. */
export const RUNTIME_MANIFEST_FILE = 'dstack-runtime.json';
/** The node binary, relative to the root. */
export const RUNTIME_NODE_FILE = 'bin/node';
/** The directory of the loader and the libraries, relative to the root. */
export const RUNTIME_LIBRARY_DIRECTORY = 'lib';
/** The runner bundle, relative to the root. */
export const RUNTIME_RUNNER_FILE = 'runner.mjs';
/** The manifest's format; a runtime of another format is rebuilt. */
export const RUNTIME_FORMAT = 1;

/** `dstack-runtime.json`. */
export interface PortableRuntimeManifest {
  format: typeof RUNTIME_FORMAT;
  /** The architecture it runs on, as `uname -m` names it. */
  machine: 'x86_64' | 'aarch64';
  /** `process.version` of its node. */
  node_version: string;
  /** The loader, relative to the root (`lib/ld-linux-x86-64.so.2`); null for a static node. */
  loader: string | null;
  /** The files in `lib/` besides the loader. */
  libraries: string[];
}

/** True for a loader's file name: `ld-linux-x86-64.so.2`, `ld-linux-aarch64.so.1`, `ld-musl-x86_64.so.1`. */
export function isLoaderFileName(fileName: string): boolean {
  return /^ld-[\w.-]*\.so(\.\d+)*$/.test(fileName);
}

/**
 * The loader's options that make it take libraries from `libraryDirectory` only: `--library-path`
 * (glibc and musl), and for glibc `--inhibit-cache`, so that the image's `/etc/ld.so.cache` never
 * hands node a library of the image's own libc.
 */
export function loaderArguments(loaderPath: string, libraryDirectory: string): string[] {
  const glibc = posix.basename(loaderPath).startsWith('ld-linux');
  return ['--library-path', libraryDirectory, ...(glibc ? ['--inhibit-cache'] : [])];
}

/** The command line that starts the runtime's node from `root` (an absolute path where the runtime is). */
export function runtimeNodeCommand(manifest: PortableRuntimeManifest, root: string): string[] {
  const node = posix.join(root, RUNTIME_NODE_FILE);
  if (manifest.loader === null) return [node];
  const loader = posix.join(root, manifest.loader);
  return [loader, ...loaderArguments(loader, posix.join(root, RUNTIME_LIBRARY_DIRECTORY)), node];
}

/** The command line that starts the runner from `root`; its own arguments (`start …`) follow. */
export function runtimeRunnerCommand(manifest: PortableRuntimeManifest, root: string): string[] {
  return [...runtimeNodeCommand(manifest, root), posix.join(root, RUNTIME_RUNNER_FILE)];
}
