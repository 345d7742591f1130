/**
 * One file over HTTP where emulated machines can download it (the agent runtime for VMs and
 * containers), and the workspace package tarballs they download: packed with
 * `pnpm pack` exactly as a release publishes them.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { basename, dirname, join, relative, sep } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface ServedFile {
  /** `http://<host>:<port>/<the file's name>`. */
  readonly url: string;
  /** From now on every download is answered with this HTTP status (a broken mirror); null: served again. */
  failDownloads(status: number | null): void;
  close(): Promise<void>;
}

/**
 * Serves `path` at `/<its name>` on `host` (an address of this machine); anything else is 404.
 * `Range: bytes=N-` is answered with the rest of the file (206), as npm's registry and S3 answer
 * it, so a download cut short resumes.
 */
export async function serveFile(path: string, host: string): Promise<ServedFile> {
  const name = basename(path);
  let failure: number | null = null;
  const server = createServer((request, response) => {
    if (failure !== null) {
      response.writeHead(failure).end();
      return;
    }
    if (request.url !== `/${name}`) {
      response.writeHead(404).end();
      return;
    }
    stat(path).then(
      ({ size }) => {
        const range = /^bytes=(\d+)-$/.exec(request.headers.range ?? '');
        const from = range ? Number(range[1]) : 0;
        if (from >= size && size > 0) {
          response.writeHead(416, { 'content-range': `bytes */${size}` }).end();
          return;
        }
        response.writeHead(range ? 206 : 200, {
          'content-type': 'application/gzip',
          'content-length': size - from,
          'accept-ranges': 'bytes',
          ...(range ? { 'content-range': `bytes ${from}-${size - 1}/${size}` } : {}),
        });
        createReadStream(path, { start: from }).pipe(response);
      },
      () => response.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error(`the server of ${name} has no port`);
  const hostInUrl = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${hostInUrl}:${address.port}/${name}`,
    failDownloads(status) {
      failure = status;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export interface PackedPackage {
  /** The tarball's path. */
  readonly path: string;
  /** Removes the tarball and its directory (nothing for a tarball kept for the machine). */
  remove(): Promise<void>;
}

/** Where packed tarballs are kept for the machine: DSTACK_TEST_CACHE (default /var/cache/dstack-test)/packed-packages. */
function packedPackagesCache(): string {
  return join(process.env.DSTACK_TEST_CACHE ?? '/var/cache/dstack-test', 'packed-packages');
}

/**
 * What `pnpm pack` takes from a package directory, as a key: the path, size and modification time
 * of package.json, its README, CHANGELOG and LICENSE, and every file under its `files` (every file
 * outside node_modules when it names none).
 */
async function packageContentKey(packageDirectory: string, files?: readonly string[]): Promise<string> {
  // A pattern counts by its part before the first wildcard: more files than it packs, never fewer.
  const listed = files?.map((entry) => entry.replace(/^\.\//, '').split(/[*?[{]/)[0] as string);
  const packed = (path: string) =>
    /^(package\.json|(README|CHANGELOG|LICENSE)[^/]*)$/i.test(path) ||
    !listed ||
    listed.some(
      (entry) =>
        entry === '' || path === entry || path.startsWith(entry.endsWith('/') ? entry : `${entry}${sep}`),
    );
  const entries = await readdir(packageDirectory, { recursive: true, withFileTypes: true });
  const keyed = entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(packageDirectory, join(entry.parentPath ?? entry.path, entry.name)))
    .filter((path) => !path.split(sep).includes('node_modules') && packed(path))
    .sort();
  const hash = createHash('sha256');
  for (const path of keyed) {
    const { size, mtimeMs } = await stat(join(packageDirectory, path));
    hash.update(`${path}\0${size}\0${mtimeMs}\n`);
  }
  return hash.digest('hex').slice(0, 16);
}

/** A day after they were packed, the other tarballs of the same package go (a run still serving one is long over). */
async function removeStalePacks(cache: string, current: string): Promise<void> {
  const prefix = current.slice(0, current.lastIndexOf('-') + 1);
  for (const entry of await readdir(cache)) {
    if (entry === current || !entry.startsWith(prefix)) continue;
    const path = join(cache, entry);
    const { mtimeMs } = await stat(path).catch(() => ({ mtimeMs: Date.now() }));
    if (Date.now() - mtimeMs > 24 * 3600_000) await rm(path, { recursive: true, force: true });
  }
}

async function packInto(packageDirectory: string, directory: string): Promise<string> {
  await run('pnpm', ['pack', '--pack-destination', directory], { cwd: packageDirectory });
  const [tarball] = (await readdir(directory)).filter((file) => file.endsWith('.tgz'));
  if (!tarball) throw new Error(`pnpm pack of ${packageDirectory} made no tarball`);
  return join(directory, tarball);
}

/**
 * The workspace package `name` (built) packed by `pnpm pack`. Packing the agent runtime (over
 * 100 MB) costs seconds of CPU and most end-to-end files serve it, so a tarball is kept for the
 * machine by what the package's directory holds (the first file of a run to need it, or the
 * run's global set-up, packs it; a rebuild packs again).
 */
export async function packWorkspacePackage(name: string): Promise<PackedPackage> {
  return packPackageDirectory(dirname(createRequire(import.meta.url).resolve(`${name}/package.json`)));
}

/** The package in `packageDirectory` packed by `pnpm pack`, kept for the machine (see `packWorkspacePackage`). */
export async function packPackageDirectory(packageDirectory: string): Promise<PackedPackage> {
  const { name, files } = JSON.parse(await readFile(join(packageDirectory, 'package.json'), 'utf8')) as {
    name: string;
    files?: string[];
  };
  const cache = packedPackagesCache();
  const key = await packageContentKey(packageDirectory, files);
  const kept = join(cache, `${name.replace(/[@/]/g, '_')}-${key}`);
  const keep = async () => ({ path: join(kept, (await readdir(kept))[0] as string), remove: async () => {} });
  if (existsSync(kept)) return keep();
  await mkdir(cache, { recursive: true });
  const directory = await mkdtemp(join(cache, '.packing-'));
  try {
    await packInto(packageDirectory, directory);
    // Whole or not at all: another worker may have kept the same tarball meanwhile.
    await rename(directory, kept).catch(() => rm(directory, { recursive: true, force: true }));
    await removeStalePacks(cache, basename(kept));
    return await keep();
  } catch (error) {
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
}

/** The workspace package `name` (built) packed as a release packs it and served on `host`; closing removes the tarball. */
export async function servePackedWorkspacePackage(name: string, host: string): Promise<ServedFile> {
  const packed = await packWorkspacePackage(name);
  let served: ServedFile;
  try {
    served = await serveFile(packed.path, host);
  } catch (error) {
    await packed.remove();
    throw error;
  }
  return {
    url: served.url,
    failDownloads: (status) => served.failDownloads(status),
    async close() {
      await served.close();
      await packed.remove();
    },
  };
}
