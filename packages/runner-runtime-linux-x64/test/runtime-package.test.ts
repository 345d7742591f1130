/**
 * The tarball this package publishes, packed as a release packs it: the runtime sits where core's
 * container entrypoint looks for it, and the runner starts from it once unpacked, the way the
 * entrypoint starts it (Docker boots of it are backend-vastai's container-entrypoint-boot test).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  AGENT_RUNTIME_GATEWAY_FILE,
  AGENT_RUNTIME_SHIM_FILE,
  CORE_VERSION,
  RUNTIME_ARCHIVE_ROOTS,
} from '@dstack/core';
import { RUNNER_BUNDLE_PATH, VERSION as RUNNER_VERSION } from '@dstack/runner';
import { GATEWAY_BUNDLE_PATH, SHIM_BUNDLE_PATH, VERSION as SHIM_VERSION } from '@dstack/shim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const packageDirectory = join(dirname(fileURLToPath(import.meta.url)), '..');
const RUNTIME = 'package/dist/dstack-runtime';

/** A file's digest: the bundles are megabytes, which `toEqual` on their bytes compares one by one (half a minute). */
async function sha256Of(path: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(path))
    .digest('hex');
}

describe('the published runtime package', () => {
  let directory = '';
  let tarball = '';

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'dstack-runtime-package-'));
    await run('pnpm', ['pack', '--pack-destination', directory], { cwd: packageDirectory });
    const [name] = (await readdir(directory)).filter((file) => file.endsWith('.tgz'));
    if (!name) throw new Error('pnpm pack made no tarball');
    tarball = join(directory, name);
  }, 120_000);

  afterAll(async () => {
    if (directory) await rm(directory, { recursive: true, force: true });
  });

  it("holds the runtime where core's entrypoint looks for it, with nothing else besides package.json, README and CHANGELOG", async () => {
    expect(RUNTIME_ARCHIVE_ROOTS).toContain(RUNTIME);
    const { stdout } = await run('tar', ['-tzf', tarball]);
    const entries = stdout.split('\n').filter(Boolean).sort();
    expect(entries.filter((entry) => !entry.startsWith(`${RUNTIME}/`))).toEqual([
      'package/CHANGELOG.md',
      'package/README.md',
      'package/package.json',
    ]);
    expect(entries).toEqual(
      expect.arrayContaining([
        `${RUNTIME}/bin/node`,
        `${RUNTIME}/runner.mjs`,
        `${RUNTIME}/${AGENT_RUNTIME_SHIM_FILE}`,
        `${RUNTIME}/${AGENT_RUNTIME_GATEWAY_FILE}`,
        `${RUNTIME}/dstack-runtime.json`,
        `${RUNTIME}/lib/ld-linux-x86-64.so.2`,
      ]),
    );
  });

  it('starts the runner, the shim and the gateway bundles of this workspace through its own loader once unpacked and made executable', async () => {
    const unpacked = join(directory, 'unpacked');
    await mkdir(unpacked);
    await run('tar', ['-xzf', tarball, '-C', unpacked]);
    const root = join(unpacked, RUNTIME);
    const manifest = JSON.parse(await readFile(join(root, 'dstack-runtime.json'), 'utf8'));
    expect(manifest).toMatchObject({ machine: 'x86_64', loader: 'lib/ld-linux-x86-64.so.2' });
    expect(await sha256Of(join(root, 'runner.mjs'))).toBe(await sha256Of(RUNNER_BUNDLE_PATH));
    // As the entrypoint does: packing dropped the execute bits.
    await run('sh', ['-c', `chmod 0755 "${root}/bin/node" "${root}"/lib/*`]);
    const { stdout } = await run(join(root, 'lib/ld-linux-x86-64.so.2'), [
      '--library-path',
      join(root, 'lib'),
      '--inhibit-cache',
      join(root, 'bin/node'),
      join(root, 'runner.mjs'),
      '--version',
    ]);
    expect(stdout.trim()).toContain(RUNNER_VERSION);
    // The shim the VM bootstrap and the SSH deploy start from it, with no node of the host.
    expect(await sha256Of(join(root, AGENT_RUNTIME_SHIM_FILE))).toBe(await sha256Of(SHIM_BUNDLE_PATH));
    const shim = await run(
      join(root, 'lib/ld-linux-x86-64.so.2'),
      [
        '--library-path',
        join(root, 'lib'),
        '--inhibit-cache',
        join(root, 'bin/node'),
        join(root, AGENT_RUNTIME_SHIM_FILE),
        '--version',
      ],
      { env: {} },
    );
    expect(shim.stdout.trim()).toBe(SHIM_VERSION);
    // The gateway agent gateway instances start from it, the same way.
    expect(await sha256Of(join(root, AGENT_RUNTIME_GATEWAY_FILE))).toBe(await sha256Of(GATEWAY_BUNDLE_PATH));
    const gateway = await run(
      join(root, 'lib/ld-linux-x86-64.so.2'),
      [
        '--library-path',
        join(root, 'lib'),
        '--inhibit-cache',
        join(root, 'bin/node'),
        join(root, AGENT_RUNTIME_GATEWAY_FILE),
        '--version',
      ],
      { env: {} },
    );
    expect(gateway.stdout.trim()).toBe(SHIM_VERSION);
  }, 180_000);

  it('is released at the version the default download URL names', async () => {
    const manifest = JSON.parse(await readFile(join(packageDirectory, 'package.json'), 'utf8'));
    expect(manifest.version).toBe(CORE_VERSION);
  });
});
