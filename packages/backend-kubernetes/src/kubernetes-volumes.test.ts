import type { Volume } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import {
  claimNameOf,
  claimProvisioningData,
  claimSizeGb,
  persistentVolumeClaim,
  podVolumes,
} from './kubernetes-volumes.js';

function volume(
  overrides: Omit<Partial<Volume>, 'configuration'> & {
    configuration?: Partial<Volume['configuration']>;
  } = {},
): Volume {
  const { configuration, ...rest } = overrides;
  return {
    id: '3f2a9c1e-0000-4000-8000-000000000001',
    name: 'data',
    user: 'alice',
    project_name: 'main',
    external: false,
    created_at: '2026-01-01T00:00:00Z',
    status: 'provisioning',
    deleted: false,
    cost: 0,
    configuration: { type: 'volume', backend: 'kubernetes', region: 'cluster-a', size: 10, ...configuration },
    ...rest,
  } as Volume;
}

describe('the PersistentVolumeClaim of a created volume', () => {
  it("asks for the size in GiB with dstack's default access mode and the cluster's default class", () => {
    const claim = persistentVolumeClaim(volume(), 'dstack-main-data-abc');

    expect(claim).toMatchObject({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: {
        name: 'dstack-main-data-abc',
        labels: {
          'app.kubernetes.io/name': 'dstack-volume',
          'app.kubernetes.io/managed-by': 'dstack',
          'k8s.dstack.ai/project': 'main',
          'k8s.dstack.ai/name': 'data',
        },
      },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } } },
    });
    expect(claim.spec).not.toHaveProperty('storageClassName');
  });

  it('takes the storage class and access modes, and the tags Kubernetes accepts as labels', () => {
    const claim = persistentVolumeClaim(
      volume({
        configuration: {
          size: 0.5,
          storage_class_name: 'fast',
          access_modes: ['ReadWriteMany'],
          tags: { team: 'ml', 'k8s.dstack.ai/project': 'other', note: 'not a label value!' },
        },
      }),
      'claim',
    );

    expect(claim.spec).toEqual({
      accessModes: ['ReadWriteMany'],
      storageClassName: 'fast',
      resources: { requests: { storage: '0.5Gi' } },
    });
    expect(claim.metadata?.labels).toMatchObject({ team: 'ml', 'k8s.dstack.ai/project': 'main' });
    expect(claim.metadata?.labels).not.toHaveProperty('note');
  });

  it('is named after the volume id: the same volume gives the same name, another volume another', () => {
    const name = claimNameOf(volume());

    expect(name).toMatch(/^dstack-main-data-[a-z0-9]{8}$/);
    expect(claimNameOf(volume())).toBe(name);
    expect(claimNameOf(volume({ id: '3f2a9c1e-0000-4000-8000-000000000002' }))).not.toBe(name);
  });

  it('is provisioned for the cluster to attach: the server neither attaches nor detaches it', () => {
    expect(claimProvisioningData('claim', 10)).toEqual({
      backend: 'kubernetes',
      volume_id: 'claim',
      size_gb: 10,
      attachable: false,
      detachable: false,
    });
  });
});

describe('the size of a registered claim', () => {
  it('is its bound capacity in whole GiB, else its request', () => {
    const bound = { metadata: { name: 'c' }, spec: { resources: { requests: { storage: '1Gi' } } } };
    expect(claimSizeGb({ ...bound, status: { capacity: { storage: '20Gi' } } })).toBe(20);
    expect(claimSizeGb(bound)).toBe(1);
    expect(claimSizeGb({ ...bound, spec: { resources: { requests: { storage: '1500Mi' } } } })).toBe(1);
  });

  it('is an error naming the claim when it says neither', () => {
    expect(() => claimSizeGb({ metadata: { name: 'c' }, spec: {} })).toThrow(
      'Failed to detect PersistentVolumeClaim c capacity',
    );
  });
});

describe('podVolumes', () => {
  it('mounts each network mount point by the claim of its given volume, and instance paths from the node', () => {
    const given = [
      volume({ name: 'data', volume_id: 'claim-data' }),
      volume({ name: 'ro', volume_id: 'claim-ro', configuration: { read_only: true } }),
    ];

    const result = podVolumes(
      [
        { name: ['elsewhere', 'data'], path: '/data' },
        { instance_path: '/mnt/cache', path: '/cache', optional: false },
        { name: 'ro', path: '/ro' },
      ],
      given,
    );

    expect(result.volumes).toEqual([
      { name: 'pvc-0', persistentVolumeClaim: { claimName: 'claim-data' } },
      { name: 'host-path-1', hostPath: { path: '/mnt/cache', type: 'DirectoryOrCreate' } },
      { name: 'pvc-2', persistentVolumeClaim: { claimName: 'claim-ro', readOnly: true } },
    ]);
    expect(result.volumeMounts).toEqual([
      { name: 'pvc-0', mountPath: '/data' },
      { name: 'host-path-1', mountPath: '/cache' },
      { name: 'pvc-2', mountPath: '/ro', readOnly: true },
    ]);
  });

  it('refuses a mount point whose volume was not given, naming it', () => {
    expect(() => podVolumes([{ name: 'data', path: '/data' }], [])).toThrow(
      'no PersistentVolumeClaim given for the volume data at /data',
    );
  });
});
