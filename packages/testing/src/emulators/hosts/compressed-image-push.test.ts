import { execFile } from 'node:child_process';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type LocalDockerRegistry,
  localDockerRegistryMissing,
  startLocalDockerRegistry,
} from './local-docker-registry.js';
import { ensureRunnerTestImages, RUNNER_BUSYBOX_TEST_IMAGE } from './runner-test-images.js';

const run = promisify(execFile);
const dockerAnswers = await run('docker', ['info'], { timeout: 20_000 }).then(
  () => true,
  () => false,
);
const registryMissing = await localDockerRegistryMissing({ anonymous: true });
/** CI has Docker and the registry (.ci/run): there a missing one fails rather than skips. */
const skipped = (!dockerAnswers || registryMissing !== null) && process.env.CI !== 'true';

const CACHE = '/var/cache/dstack-test/compressed-images';
/** A probe image of this process: its own cache folder, removed after. */
const PROBE = `dstack-test/compressed-push-probe-${process.pid}`;
const probeCache = join(CACHE, PROBE.replace(/[^a-z0-9]+/g, '-'));

/** Tags `PROBE:v1`: busybox and a layer with `marker` at /marker (a new image id for each marker). */
async function buildProbe(marker: string): Promise<string> {
  const { stdout } = await run('docker', ['create', RUNNER_BUSYBOX_TEST_IMAGE, 'true']);
  const container = stdout.trim();
  try {
    await run('sh', [
      '-c',
      'dir=$(mktemp -d) && printf "%s" "$1" > "$dir/marker" && tar -C "$dir" -c marker | docker cp - "$2":/; status=$?; rm -rf "$dir"; exit $status',
      'sh',
      marker,
      container,
    ]);
    await run('docker', ['commit', container, `${PROBE}:v1`]);
  } finally {
    await run('docker', ['rm', '--force', container]);
  }
  return `${PROBE}:v1`;
}

describe.skipIf(skipped)('pushCompressed', () => {
  let registry: LocalDockerRegistry;

  beforeAll(async () => {
    await ensureRunnerTestImages();
    registry = await startLocalDockerRegistry({ anonymous: true });
  }, 300_000);

  afterAll(async () => {
    await registry?.stop();
    await run('docker', ['image', 'rm', '--force', `${PROBE}:v1`]).catch(() => undefined);
    await rm(probeCache, { recursive: true, force: true });
  });

  it('pushes an image a daemon pulls and runs; its compressed layers are made once per image id', async () => {
    const probe = await buildProbe('first build\n');
    const pushed = await registry.pushCompressed(probe, 'team/probe:v1');
    expect(pushed).toBe(`${registry.address}/team/probe:v1`);
    const [folder] = await readdir(probeCache);
    if (!folder) throw new Error(`no cache folder in ${probeCache}`);
    const made = (await stat(join(probeCache, folder, 'blobs.json'))).mtimeMs;
    // Pushed again (as by another test file's registry): the same folder, not made again.
    await registry.pushCompressed(probe, 'team/probe:v2');
    expect(await readdir(probeCache)).toEqual([folder]);
    expect((await stat(join(probeCache, folder, 'blobs.json'))).mtimeMs).toBe(made);

    // Without the probe, the daemon has its busybox layer but not the marker's: the pull downloads
    // that gzipped layer and checks it against its digest and the config's diff_id.
    await run('docker', ['image', 'rm', probe]);
    await run('docker', ['pull', '-q', pushed]);
    expect((await run('docker', ['run', '--rm', pushed, 'cat', '/marker'])).stdout).toBe('first build\n');

    // Rebuilt (a new image id): a new folder replaces the old one, and the pull gets the new layer.
    await buildProbe('second build\n');
    await registry.pushCompressed(probe, 'team/probe:v3');
    await run('docker', ['image', 'rm', probe]);
    const folders = await readdir(probeCache);
    expect(folders).toHaveLength(1);
    expect(folders).not.toContain(folder);
    await run('docker', ['pull', '-q', `${registry.address}/team/probe:v3`]);
    const output = await run('docker', [
      'run',
      '--rm',
      `${registry.address}/team/probe:v3`,
      'cat',
      '/marker',
    ]);
    expect(output.stdout).toBe('second build\n');
  }, 180_000);
});
