import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  chmod,
  copyFile,
  link,
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { RUNNER_BUNDLE_PATH } from '../paths.js';
import { readElfProgram } from './elf-program.js';
import {
  type PortableRuntimeManifest,
  RUNTIME_FORMAT,
  RUNTIME_LIBRARY_DIRECTORY,
  RUNTIME_MANIFEST_FILE,
  RUNTIME_NODE_FILE,
  RUNTIME_RUNNER_FILE,
  runtimeNodeCommand,
} from './portable-runtime-layout.js';
import { listSharedLibraries } from './shared-libraries.js';

const execFileAsync = promisify(execFile);

/** A portable runtime on this host (see `portable-runtime-layout.ts`). */
export interface PortableRuntime {
  /** Its absolute path. */
  directory: string;
  manifest: PortableRuntimeManifest;
}

export interface PortableRuntimeSources {
  /** The node binary it carries. Default: the node running this code (`process.execPath`). */
  nodeBinaryPath?: string;
  /** The runner bundle it carries. Default: `RUNNER_BUNDLE_PATH`. */
  runnerBundlePath?: string;
  /**
   * A runtime of the same node binary on the same filesystem: its node, loader and libraries are
   * hard-linked instead of copied, so that one runtime per runner bundle costs the bundle alone.
   */
  nodeFrom?: PortableRuntime;
}

export interface PreparePortableRuntimeOptions extends PortableRuntimeSources {
  /**
   * Where runtimes are kept, one subdirectory per node binary and runner bundle. Created with mode
   * 0700; it must belong to this user and be writable by no one else, since what it holds runs as
   * root in containers.
   */
  cacheDirectory: string;
}

/**
 * The portable runtime for this node binary and runner bundle: built into `cacheDirectory` the
 * first time, then found there again, by this process or another, until either file changes.
 * Concurrent callers (several shims sharing a cache) each get a complete runtime: a build goes
 * to a directory of its own and is renamed into place.
 */
export async function preparePortableRuntime(
  options: PreparePortableRuntimeOptions,
): Promise<PortableRuntime> {
  const nodeBinaryPath = options.nodeBinaryPath ?? process.execPath;
  const runnerBundlePath = options.runnerBundlePath ?? RUNNER_BUNDLE_PATH;
  await ensurePrivateDirectory(options.cacheDirectory);
  const nodeKey = await nodeBinaryKey(nodeBinaryPath);
  const key = `${nodeKey}-${await runnerBundleKey(runnerBundlePath)}`;
  const directory = join(options.cacheDirectory, key);
  const existing = await readPortableRuntime(directory).catch(() => undefined);
  if (existing !== undefined) return existing;

  const building = join(options.cacheDirectory, `.building-${key}-${randomBytes(4).toString('hex')}`);
  try {
    const nodeFrom = await findRuntimeOfNode(options.cacheDirectory, nodeKey);
    await buildPortableRuntime(building, { nodeBinaryPath, runnerBundlePath, nodeFrom });
    try {
      await rename(building, directory);
    } catch (error) {
      // Another build of the same key won the race, or a broken leftover sits there.
      const winner = await readPortableRuntime(directory).catch(() => undefined);
      if (winner !== undefined) return winner;
      await rm(directory, { recursive: true, force: true });
      await rename(building, directory).catch(() => {
        throw error;
      });
    }
  } finally {
    await rm(building, { recursive: true, force: true });
  }
  return readPortableRuntime(directory);
}

/**
 * Builds a portable runtime into `directory` (which must not exist) from the node binary, its
 * loader and libraries as this host resolves them, and the runner bundle; then runs its node
 * through its own loader to prove that the copy is complete.
 */
export async function buildPortableRuntime(
  directory: string,
  sources: PortableRuntimeSources = {},
): Promise<PortableRuntime> {
  const nodeBinaryPath = sources.nodeBinaryPath ?? process.execPath;
  const runnerBundlePath = sources.runnerBundlePath ?? RUNNER_BUNDLE_PATH;
  if (sources.nodeFrom !== undefined) {
    return buildFromRuntimeOfNode(directory, sources.nodeFrom, runnerBundlePath);
  }
  const program = await readElfProgram(nodeBinaryPath);
  const libraries =
    program.interpreter === null ? [] : await listSharedLibraries(nodeBinaryPath, program.interpreter);

  await mkdir(directory, { mode: 0o755 });
  await mkdir(join(directory, 'bin'), { mode: 0o755 });
  await mkdir(join(directory, RUNTIME_LIBRARY_DIRECTORY), { mode: 0o755 });
  // copyFile follows symbolic links: each library lands as a file under the name node asks for.
  await copyInto(nodeBinaryPath, join(directory, RUNTIME_NODE_FILE), 0o755);
  await copyInto(runnerBundlePath, join(directory, RUNTIME_RUNNER_FILE), 0o644);
  let loader: string | null = null;
  if (program.interpreter !== null) {
    loader = `${RUNTIME_LIBRARY_DIRECTORY}/${basename(program.interpreter)}`;
    await copyInto(program.interpreter, join(directory, loader), 0o755);
  }
  for (const library of libraries) {
    await copyInto(library.path, join(directory, RUNTIME_LIBRARY_DIRECTORY, library.name), 0o755);
  }

  const draft: PortableRuntimeManifest = {
    format: RUNTIME_FORMAT,
    machine: program.machine,
    node_version: '',
    loader,
    libraries: libraries.map((library) => library.name).sort(),
  };
  const manifest = { ...draft, node_version: await runtimeNodeVersion(draft, directory) };
  await writeManifest(directory, manifest);
  return { directory, manifest };
}

/** A runtime of another runner bundle: hard links to the node part of `nodeFrom`, a copy of the bundle. */
async function buildFromRuntimeOfNode(
  directory: string,
  nodeFrom: PortableRuntime,
  runnerBundlePath: string,
): Promise<PortableRuntime> {
  await mkdir(directory, { mode: 0o755 });
  await mkdir(join(directory, 'bin'), { mode: 0o755 });
  await mkdir(join(directory, RUNTIME_LIBRARY_DIRECTORY), { mode: 0o755 });
  const { manifest } = nodeFrom;
  const nodeFiles = [
    RUNTIME_NODE_FILE,
    ...(manifest.loader === null ? [] : [manifest.loader]),
    ...manifest.libraries.map((name) => `${RUNTIME_LIBRARY_DIRECTORY}/${name}`),
  ];
  for (const file of nodeFiles) await link(join(nodeFrom.directory, file), join(directory, file));
  await copyInto(runnerBundlePath, join(directory, RUNTIME_RUNNER_FILE), 0o644);
  await writeManifest(directory, manifest);
  return { directory, manifest };
}

async function writeManifest(directory: string, manifest: PortableRuntimeManifest): Promise<void> {
  await writeFile(join(directory, RUNTIME_MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, {
    mode: 0o644,
  });
}

/** A complete runtime in the cache built from the node binary of `nodeKey`, if there is one. */
async function findRuntimeOfNode(
  cacheDirectory: string,
  nodeKey: string,
): Promise<PortableRuntime | undefined> {
  for (const entry of await readdir(cacheDirectory)) {
    if (!entry.startsWith(`${nodeKey}-`)) continue;
    const runtime = await readPortableRuntime(join(cacheDirectory, entry)).catch(() => undefined);
    if (runtime !== undefined) return runtime;
  }
  return undefined;
}

/** The runtime in `directory`, from its manifest; an error when it is missing, foreign or incomplete. */
export async function readPortableRuntime(directory: string): Promise<PortableRuntime> {
  const manifestPath = join(directory, RUNTIME_MANIFEST_FILE);
  const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as Partial<PortableRuntimeManifest>;
  if (manifest.format !== RUNTIME_FORMAT) {
    throw new Error(`${manifestPath}: format ${String(manifest.format)}, expected ${RUNTIME_FORMAT}`);
  }
  if (
    (manifest.machine !== 'x86_64' && manifest.machine !== 'aarch64') ||
    typeof manifest.node_version !== 'string' ||
    (manifest.loader !== null && typeof manifest.loader !== 'string') ||
    !Array.isArray(manifest.libraries)
  ) {
    throw new Error(`${manifestPath}: not a portable runtime manifest`);
  }
  const complete = manifest as PortableRuntimeManifest;
  const files = [
    RUNTIME_NODE_FILE,
    RUNTIME_RUNNER_FILE,
    ...(complete.loader === null ? [] : [complete.loader]),
    ...complete.libraries.map((name) => `${RUNTIME_LIBRARY_DIRECTORY}/${name}`),
  ];
  for (const file of files) await stat(join(directory, file));
  return { directory, manifest: complete };
}

/** Runs the runtime's node as a container will (through its loader, with an empty environment). */
async function runtimeNodeVersion(manifest: PortableRuntimeManifest, directory: string): Promise<string> {
  const [command = '', ...args] = runtimeNodeCommand(manifest, directory);
  try {
    const { stdout } = await execFileAsync(command, [...args, '-p', 'process.version'], { env: {} });
    return stdout.trim();
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(
      `the portable runtime in ${directory} does not start its node: ${stderr || (error as Error).message}`,
    );
  }
}

/**
 * Names the node binary by identity (path, inode, size, modification time: a reinstall changes
 * them; hashing 100 MB at every start would not pay) and the layout's format.
 */
async function nodeBinaryKey(nodeBinaryPath: string): Promise<string> {
  const node = await stat(nodeBinaryPath);
  const identity = [RUNTIME_FORMAT, nodeBinaryPath, node.dev, node.ino, node.size, node.mtimeMs];
  return createHash('sha256').update(JSON.stringify(identity)).digest('hex').slice(0, 16);
}

/** Names the runner bundle by content. */
async function runnerBundleKey(runnerBundlePath: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(runnerBundlePath))
    .digest('hex')
    .slice(0, 16);
}

async function copyInto(source: string, target: string, mode: number): Promise<void> {
  await copyFile(source, target);
  await chmod(target, mode);
}

/** Creates `directory` (mode 0700) or checks that an existing one is this user's and no one else's to write. */
async function ensurePrivateDirectory(directory: string): Promise<void> {
  await mkdir(directory, { recursive: true, mode: 0o700 });
  const info = await stat(directory);
  const uid = process.getuid?.();
  if (uid !== undefined && info.uid !== uid) {
    throw new Error(
      `the runtime cache ${directory} belongs to uid ${info.uid}, not to this user (uid ${uid})`,
    );
  }
  if ((info.mode & 0o022) !== 0) {
    throw new Error(
      `the runtime cache ${directory} may be written by other users (mode ${(info.mode & 0o777).toString(8)}): make it 0700`,
    );
  }
}
