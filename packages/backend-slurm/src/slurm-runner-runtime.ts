/**
 * How the runner gets to a Slurm cluster: as the SSH fleet path brings the agents to a host, the
 * backend copies a portable runtime (this server's node with its own loader and libraries, and
 * the runner's bundle: `@dstack/runner`'s `preparePortableRuntime`) over SSH to the login node,
 * into the user's home, which a cluster shares with its compute nodes; jobs start the runner from
 * there. It is copied once per runtime (named by the node binary and the bundle), and the compute
 * nodes need nothing but a POSIX shell.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { shellQuote } from '@dstack/core';
import {
  type PortableRuntimeManifest,
  preparePortableRuntime,
  RUNTIME_ARCHIVE_ROOT,
  writePortableRuntimeArchive,
} from '@dstack/runner';
import type { SlurmLoginSession } from './slurm-login.js';

/** Where the login node keeps runtimes, relative to the user's home. */
export const CLUSTER_RUNTIME_DIRECTORY = '.dstack/slurm/runtime';

export interface RunnerRuntimeArchive {
  /** The `.tar.gz` on this machine (unpacks into `dstack-runtime/`). */
  path: string;
  /** Names the runtime by content: where the cluster keeps it. */
  key: string;
  manifest: PortableRuntimeManifest;
}

let prepared: Promise<RunnerRuntimeArchive> | undefined;

/** The shim's cache of portable runtimes (`XDG_CACHE_HOME` or `~/.cache`), shared with it. */
function runtimeCacheDirectory(): string {
  const cacheHome = process.env.XDG_CACHE_HOME;
  return join(cacheHome ? cacheHome : join(homedir(), '.cache'), 'dstack', 'runner-runtime');
}

/** The archive of this server's runner runtime, made at the first call (a failure is not kept). */
export function localRunnerRuntime(): Promise<RunnerRuntimeArchive> {
  if (prepared === undefined) {
    prepared = (async () => {
      const runtime = await preparePortableRuntime({ cacheDirectory: runtimeCacheDirectory() });
      const path = `${runtime.directory}.tar.gz`;
      // Written by rename, so an archive that exists is complete: made once per runtime.
      if (!existsSync(path)) await writePortableRuntimeArchive(runtime, path);
      return { path, key: basename(runtime.directory), manifest: runtime.manifest };
    })();
    prepared.catch(() => {
      prepared = undefined;
    });
  }
  return prepared;
}

/**
 * Puts the runtime on the cluster unless it is there (`<key>/installed`): uploaded beside its
 * place, unpacked, made executable and renamed into place, so a job never sees half a runtime.
 * Resolves with the runtime's absolute root on the cluster.
 */
export async function installRunnerRuntime(
  session: SlurmLoginSession,
  archive: RunnerRuntimeArchive,
): Promise<string> {
  const home = await session.homeDirectory();
  const target = `${home}/${CLUSTER_RUNTIME_DIRECTORY}/${archive.key}`;
  const root = `${target}/${RUNTIME_ARCHIVE_ROOT}`;
  const state = await session.run(
    'checking the runner runtime',
    `mkdir -p ${shellQuote(`${home}/${CLUSTER_RUNTIME_DIRECTORY}`)} && { [ -f ${shellQuote(`${target}/installed`)} ] && echo installed || true; }`,
  );
  if (state.trim() === 'installed') return root;
  const staging = `${target}.${process.pid}-${Date.now()}`;
  await session.upload(archive.path, `${staging}.tar.gz`);
  await session.run(
    'unpacking the runner runtime',
    [
      `s=${shellQuote(staging)} t=${shellQuote(target)}`,
      'trap \'rm -rf "$s" "$s.tar.gz"\' EXIT',
      'mkdir -p "$s" && tar -xzf "$s.tar.gz" -C "$s" || exit 1',
      `chmod 0755 "$s/${RUNTIME_ARCHIVE_ROOT}/bin/node" "$s/${RUNTIME_ARCHIVE_ROOT}"/lib/* || exit 1`,
      'touch "$s/installed" && { [ -f "$t/installed" ] || { rm -rf "$t" && mv "$s" "$t"; }; }',
    ].join('\n'),
  );
  return root;
}
