import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackendError, type Volume } from '@dstack/core';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalCompute } from './local-compute.js';

const temp = mkdtempSync(join(tmpdir(), 'dstack-local-volumes-'));
const volumesDir = join(temp, 'volumes');
afterAll(() => rmSync(temp, { recursive: true, force: true }));

function volume(configuration: Partial<Volume['configuration']>, extra: Partial<Volume> = {}): Volume {
  return {
    id: '0c5c9a0e-7a9b-4f3e-9a51-2f1f0c0d0e01',
    name: 'data',
    user: 'admin',
    project_name: 'main',
    configuration: { type: 'volume', backend: 'local', region: 'local', ...configuration },
    external: configuration.volume_id != null,
    created_at: new Date(0).toISOString(),
    status: 'provisioning',
    deleted: false,
    cost: 0,
    ...extra,
  };
}

describe('local volumes', () => {
  const compute = new LocalCompute({ instancesDir: join(temp, 'instances'), volumesDir });

  it('creates a directory per volume, the same one again for the same id, writable by any job user', async () => {
    const first = await compute.createVolume(volume({ size: 10 }));
    const again = await compute.createVolume(volume({ size: 10 }));
    expect(first).toEqual(again);
    expect(first).toMatchObject({
      backend: 'local',
      volume_id: `data-${volume({}).id}`,
      size_gb: 10,
      price: 0,
    });
    const directory = join(volumesDir, first.volume_id);
    expect(statSync(directory).mode & 0o777).toBe(0o777);
    expect(statSync(volumesDir).mode & 0o777).toBe(0o700);
    const attached = await compute.attachVolume(volume({}, { provisioning_data: first }));
    expect(attached).toEqual({ device_name: directory });
    expect(compute.allowsMultiAttach()).toBe(true);
    await writeFile(join(directory, 'f'), 'x');
    await compute.deleteVolume(volume({}, { provisioning_data: first }));
    await expect(compute.attachVolume(volume({}, { provisioning_data: first }))).rejects.toThrow(/is gone/);
    // Deleting what is gone is no error.
    await compute.deleteVolume(volume({}, { provisioning_data: first }));
  });

  it('registers an existing directory of volumes_dir only, by its plain name', async () => {
    await mkdir(join(volumesDir, 'datasets'), { recursive: true });
    expect(await compute.registerVolume(volume({ volume_id: 'datasets' }))).toMatchObject({
      volume_id: 'datasets',
    });
    await expect(compute.registerVolume(volume({ volume_id: 'missing' }))).rejects.toThrow(
      /no local volume "missing"/,
    );
    for (const outside of ['../instances', '/etc', '.hidden']) {
      await expect(compute.registerVolume(volume({ volume_id: outside }))).rejects.toBeInstanceOf(
        BackendError,
      );
    }
  });

  it('mounts nothing with the process runtime, and says why', () => {
    expect(compute.volumeMountRefusal()).toContain('runtime: process');
    expect(new LocalCompute({ runtime: 'docker', volumesDir }).volumeMountRefusal()).toBeNull();
  });
});
