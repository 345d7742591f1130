/**
 * The runner where emulated containers can download it: a container backend's entrypoint (core's
 * `buildContainerEntrypoint`) fetches the runner's portable runtime archive from the server's
 * `DSTACK_RUNNER_DOWNLOAD_URL`, and an emulated rental reaches nothing but its Docker network. So
 * the workspace's runner bundle is made into a portable runtime (this machine's node with its own
 * loader and libraries) once, archived, and served from this machine's address on that network.
 */
import { createReadStream } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import { createServer } from 'node:http';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { preparePortableRuntime, writePortableRuntimeArchive } from '@dstack/runner';
import { bridgeGateway } from './shim-tarball-server.js';

export interface RunnerRuntimeServer {
  /** The archive's URL, for `DSTACK_RUNNER_DOWNLOAD_URL` / `RunJobParams.runnerDownloadUrl`. */
  readonly url: string;
  close(): Promise<void>;
}

export interface ServeRunnerRuntimeOptions {
  /** The Docker network whose containers download it: served on its gateway. Or give `host`. */
  network?: string;
  /** The address to listen on (and put in the URL), when not a network's gateway. */
  host?: string;
  /** Where runtimes and their archives are kept. Default `~/.cache/dstack/runner-runtime`. */
  cacheDirectory?: string;
}

/**
 * The archive of the workspace's runner (built, `dist/dstack-runner.bundle.mjs`) with this node:
 * made once per node and bundle (kept beside the runtime in the cache), served over HTTP.
 */
export async function serveRunnerRuntime(options: ServeRunnerRuntimeOptions): Promise<RunnerRuntimeServer> {
  const cacheDirectory = options.cacheDirectory ?? join(homedir(), '.cache', 'dstack', 'runner-runtime');
  await mkdir(cacheDirectory, { recursive: true, mode: 0o700 });
  const runtime = await preparePortableRuntime({ cacheDirectory });
  const archive = `${runtime.directory}.tar.gz`;
  const exists = await access(archive).then(
    () => true,
    () => false,
  );
  if (!exists) await writePortableRuntimeArchive(runtime, archive);
  const host = options.host ?? (options.network ? await bridgeGateway(options.network) : '127.0.0.1');
  const name = basename(archive);
  const server = createServer((request, response) => {
    if (request.url !== `/${name}`) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/gzip' });
    createReadStream(archive).pipe(response);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the runtime server has no port');
  const hostInUrl = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${hostInUrl}:${address.port}/${name}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
