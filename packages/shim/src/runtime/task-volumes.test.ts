import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TaskConfigSchema } from '@dstack/core/agent-protocol';
import { afterAll, describe, expect, it } from 'vitest';
import { mountsRefusal } from './process/process-runtime.js';
import { TaskStartError } from './task-runtime.js';
import { prepareVolumes } from './task-volumes.js';

const directory = mkdtempSync(join(tmpdir(), 'dstack-task-volumes-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

function task(fields: Record<string, unknown>) {
  return TaskConfigSchema.parse({ id: 't1', name: 't', image_name: 'img', ...fields });
}

async function startError(call: () => Promise<unknown>): Promise<TaskStartError> {
  try {
    await call();
  } catch (error) {
    if (error instanceof TaskStartError) return error;
    throw error;
  }
  throw new Error('expected a TaskStartError');
}

const volumesDirectory = join(directory, 'volumes');
const volumeBinds = async (config: ReturnType<typeof task>) =>
  (await prepareVolumes(config, { volumesDirectory })).binds;

describe('task volumes', () => {
  it('binds a local volume from the directory its attachment named', async () => {
    const binds = await volumeBinds(
      task({
        volumes: [{ backend: 'local', name: 'data', volume_id: 'data-1', device_name: directory }],
        volume_mounts: [{ name: 'data', path: '/data' }],
      }),
    );
    expect(binds).toEqual([{ source: directory, target: '/data' }]);
  });

  it('refuses, with volume_error, what it cannot mount rather than leaving it out', async () => {
    const cloud = await startError(() =>
      volumeBinds(
        task({
          volumes: [{ backend: 'aws', name: 'ebs', volume_id: 'vol-1', device_name: '/dev/sdf-none' }],
          volume_mounts: [{ name: 'ebs', path: '/data' }],
        }),
      ),
    );
    expect(cloud.reason).toBe('volume_error');
    expect(cloud.message).toContain('no block device of volume vol-1 (attached as /dev/sdf-none)');
    const missing = await startError(() =>
      volumeBinds(
        task({
          volumes: [{ backend: 'local', name: 'data', volume_id: 'd', device_name: join(directory, 'gone') }],
          volume_mounts: [{ name: 'data', path: '/data' }],
        }),
      ),
    );
    expect(missing.message).toContain('is not on this host');
    const unattached = await startError(() =>
      volumeBinds(task({ volume_mounts: [{ name: 'x', path: '/x' }] })),
    );
    expect(unattached.message).toContain('not attached to the task');
  });

  it('the process runtime refuses volumes and required host paths, and leaves optional ones out', () => {
    expect(mountsRefusal(task({}))).toBeNull();
    expect(
      mountsRefusal(task({ instance_mounts: [{ instance_path: '/a', path: '/b', optional: true }] })),
    ).toBeNull();
    expect(mountsRefusal(task({ instance_mounts: [{ instance_path: '/a', path: '/b' }] }))).toContain(
      '/a at /b',
    );
    expect(
      mountsRefusal(
        task({
          volumes: [{ backend: 'local', name: 'v', volume_id: 'v' }],
          volume_mounts: [{ name: 'v', path: '/v' }],
        }),
      ),
    ).toContain('volume v at /v');
  });
});
