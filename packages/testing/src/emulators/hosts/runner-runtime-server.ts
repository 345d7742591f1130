/**
 * The runner where emulated containers can download it: a container backend's entrypoint (core's
 * `buildContainerEntrypoint`) fetches the runner's portable runtime from the server's
 * `DSTACK_RUNNER_DOWNLOAD_URL`, and an emulated rental reaches nothing but its Docker network.
 * By default the runtime is served as a release publishes it, the npm tarball of
 * `@dstack/runner-runtime-linux-x64` (built: this machine's node with its own loader and
 * libraries, and the workspace's runner bundle); or as the archive `writePortableRuntimeArchive`
 * writes for a server that hosts its own.
 */
import { access, mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { preparePortableRuntime, writePortableRuntimeArchive } from '@dstack/runner';
import { AGENT_RUNTIME_PACKAGE, bridgeGateway } from './agent-runtime-server.js';
import { serveFile, servePackedWorkspacePackage } from './served-file.js';

export interface RunnerRuntimeServer {
  /** The runtime's URL, for `DSTACK_RUNNER_DOWNLOAD_URL` / `RunJobParams.runnerDownloadUrl`. */
  readonly url: string;
  close(): Promise<void>;
}

export interface ServeRunnerRuntimeOptions {
  /** The Docker network whose containers download it: served on its gateway. Or give `host`. */
  network?: string;
  /** The address to listen on (and put in the URL), when not a network's gateway. */
  host?: string;
  /** `published-package` (default): the packed runtime package; `archive`: a self-hosted archive. */
  format?: 'published-package' | 'archive';
  /** Where `archive` keeps runtimes and their archives. Default `~/.cache/dstack/runner-runtime`. */
  cacheDirectory?: string;
}

export async function serveRunnerRuntime(options: ServeRunnerRuntimeOptions): Promise<RunnerRuntimeServer> {
  const host = options.host ?? (options.network ? await bridgeGateway(options.network) : '127.0.0.1');
  if (options.format === 'archive') return serveFile(await runtimeArchive(options.cacheDirectory), host);
  return servePackedWorkspacePackage(AGENT_RUNTIME_PACKAGE, host);
}

/** The archive of the workspace's runner (built) with this node: made once per node and bundle. */
async function runtimeArchive(cacheDirectory = join(homedir(), '.cache', 'dstack', 'runner-runtime')) {
  await mkdir(cacheDirectory, { recursive: true, mode: 0o700 });
  const runtime = await preparePortableRuntime({ cacheDirectory });
  const archive = `${runtime.directory}.tar.gz`;
  const exists = await access(archive).then(
    () => true,
    () => false,
  );
  if (!exists) await writePortableRuntimeArchive(runtime, archive);
  return archive;
}
