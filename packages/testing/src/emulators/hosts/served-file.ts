/**
 * One file over HTTP where emulated machines can download it (the agent runtime for VMs and
 * containers), and the workspace package tarballs they download: packed with
 * `pnpm pack` exactly as a release publishes them.
 */
import { execFile } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
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
  /** Removes the tarball and its directory. */
  remove(): Promise<void>;
}

/** The workspace package `name` (built) packed by `pnpm pack` into a directory of its own. */
export async function packWorkspacePackage(name: string): Promise<PackedPackage> {
  const packageDirectory = dirname(createRequire(import.meta.url).resolve(`${name}/package.json`));
  const directory = await mkdtemp(join(tmpdir(), 'dstack-packed-'));
  const remove = () => rm(directory, { recursive: true, force: true });
  try {
    await run('pnpm', ['pack', '--pack-destination', directory], { cwd: packageDirectory });
    const [tarball] = (await readdir(directory)).filter((file) => file.endsWith('.tgz'));
    if (!tarball) throw new Error(`pnpm pack of ${packageDirectory} made no tarball`);
    return { path: join(directory, tarball), remove };
  } catch (error) {
    await remove();
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
