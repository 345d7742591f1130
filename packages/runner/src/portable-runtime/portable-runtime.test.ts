import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUNNER_BUNDLE_PATH } from '../paths.js';
import { buildIfMissing } from '../testing/child-process.test.helpers.js';
import { VERSION } from '../version.js';
import { type PortableRuntime, preparePortableRuntime, readPortableRuntime } from './portable-runtime.js';
import { RUNTIME_ARCHIVE_ROOT, writePortableRuntimeArchive } from './portable-runtime-archive.js';
import { loaderArguments, runtimeNodeCommand, runtimeRunnerCommand } from './portable-runtime-layout.js';

const execFileAsync = promisify(execFile);

/** Runs a command line with an empty environment, as a container with nothing of the host's would. */
async function runClean(commandLine: string[], extraArgs: string[] = []): Promise<string> {
  const [command = '', ...args] = commandLine;
  const { stdout } = await execFileAsync(command, [...args, ...extraArgs], { env: {} });
  return stdout;
}

/** Compared as bytes: vitest's deep equality on megabytes of Buffer would take the heap. */
async function sameContent(left: string, right: string): Promise<boolean> {
  return (await readFile(left)).equals(await readFile(right));
}

describe('the portable runtime', () => {
  let directory: string;
  let cacheDirectory: string;
  let runtime: PortableRuntime;

  beforeAll(async () => {
    buildIfMissing(RUNNER_BUNDLE_PATH, '@dstack/runner');
    directory = await mkdtemp(join(tmpdir(), 'dstack-portable-runtime-'));
    cacheDirectory = join(directory, 'cache');
    runtime = await preparePortableRuntime({ cacheDirectory });
  }, 120_000);

  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('carries node with its loader and every library, and starts the runner bundle', async () => {
    const { manifest } = runtime;
    expect(manifest.machine).toBe(process.arch === 'arm64' ? 'aarch64' : 'x86_64');
    expect(manifest.node_version).toBe(process.version);
    expect(await sameContent(join(runtime.directory, 'runner.mjs'), RUNNER_BUNDLE_PATH)).toBe(true);
    expect((await stat(join(runtime.directory, 'bin/node'))).mode & 0o777).toBe(0o755);
    expect(await runClean(runtimeRunnerCommand(manifest, runtime.directory), ['--version'])).toBe(
      `${VERSION}\n`,
    );
  });

  it("resolves every library of node inside the runtime, not from the host's directories", async () => {
    const { manifest } = runtime;
    expect(manifest.loader).not.toBeNull();
    const loader = join(runtime.directory, manifest.loader ?? '');
    const libraries = join(runtime.directory, 'lib');
    const listing = await runClean([
      loader,
      ...loaderArguments(loader, libraries),
      '--list',
      join(runtime.directory, 'bin/node'),
    ]);
    const resolved = [...listing.matchAll(/=> (\S+)/g)].map((match) => match[1]);
    expect(resolved.length).toBeGreaterThan(0);
    for (const path of resolved) expect(path?.startsWith(`${libraries}/`)).toBe(true);
  });

  it('is found again in the cache, and a new runner bundle shares its node by hard links', async () => {
    expect(await preparePortableRuntime({ cacheDirectory })).toEqual(runtime);

    const bundle = join(directory, 'other-runner.mjs');
    await writeFile(bundle, "console.log('the other runner', process.argv.slice(2).join(' '));\n");
    const other = await preparePortableRuntime({ cacheDirectory, runnerBundlePath: bundle });
    expect(other.directory).not.toBe(runtime.directory);
    const [node, otherNode] = await Promise.all([
      stat(join(runtime.directory, 'bin/node')),
      stat(join(other.directory, 'bin/node')),
    ]);
    expect(otherNode.ino).toBe(node.ino);
    expect(await runClean(runtimeRunnerCommand(other.manifest, other.directory), ['start'])).toBe(
      'the other runner start\n',
    );
    // Only the two runtimes: no build directory is left behind.
    expect((await readdir(cacheDirectory)).sort()).toEqual(
      [runtime.directory, other.directory].map((path) => path.slice(cacheDirectory.length + 1)).sort(),
    );
  });

  it('is rebuilt when a runtime in the cache is incomplete', async () => {
    const bundle = join(directory, 'third-runner.mjs');
    await writeFile(bundle, "console.log('third');\n");
    const third = await preparePortableRuntime({ cacheDirectory, runnerBundlePath: bundle });
    await rm(join(third.directory, 'bin/node'));
    await expect(readPortableRuntime(third.directory)).rejects.toThrow();
    const rebuilt = await preparePortableRuntime({ cacheDirectory, runnerBundlePath: bundle });
    expect(rebuilt.directory).toBe(third.directory);
    expect(await runClean(runtimeRunnerCommand(rebuilt.manifest, rebuilt.directory))).toBe('third\n');
  });

  it('refuses a cache other users may write to', async () => {
    const shared = join(directory, 'shared-cache');
    await mkdir(shared, { mode: 0o777 });
    await execFileAsync('chmod', ['0777', shared]);
    await expect(preparePortableRuntime({ cacheDirectory: shared })).rejects.toThrow(
      `the runtime cache ${shared} may be written by other users (mode 777): make it 0700`,
    );
  });

  it('packs into a tar.gz that unpacks into a runtime that runs', async () => {
    const archive = join(directory, 'runtime.tar.gz');
    await writePortableRuntimeArchive(runtime, archive);
    const unpacked = join(directory, 'unpacked');
    await mkdir(unpacked);
    await execFileAsync('tar', ['-xzf', archive, '-C', unpacked]);
    const root = join(unpacked, RUNTIME_ARCHIVE_ROOT);
    const fromArchive = await readPortableRuntime(root);
    expect(fromArchive.manifest).toEqual(runtime.manifest);
    expect(await runClean(runtimeNodeCommand(fromArchive.manifest, root), ['-p', '6 * 7'])).toBe('42\n');
    expect(await sameContent(join(root, 'runner.mjs'), RUNNER_BUNDLE_PATH)).toBe(true);
    // Reproducible: the same runtime packs into the same bytes.
    const again = join(directory, 'again.tar.gz');
    await writePortableRuntimeArchive(runtime, again);
    expect(await sameContent(again, archive)).toBe(true);
  }, 120_000);
});
