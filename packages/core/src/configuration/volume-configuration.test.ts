import { describe, expect, test } from 'vitest';
import { ConfigurationError } from '../errors.js';
import { externalVolumeId, parseConfiguration } from './index.js';

function refusal(text: string): { path: readonly (string | number)[] | undefined; message: string } {
  try {
    parseConfiguration(text, { path: 'volume.dstack.yml' });
  } catch (error) {
    if (ConfigurationError.isInstance(error)) return { path: error.path, message: error.message };
    throw error;
  }
  throw new Error(`expected a ConfigurationError for:\n${text}`);
}

describe('kubernetes volume configurations (dstack KubernetesVolumeConfiguration)', () => {
  test('a new PersistentVolumeClaim: size, storage class, access modes, read_only', () => {
    const volume = parseConfiguration(
      'type: volume\nname: data\nbackend: kubernetes\nregion: cluster-a\nsize: 10GB\nstorage_class_name: fast\naccess_modes: [ReadWriteMany]\nread_only: true\n',
    );
    expect(volume).toMatchObject({
      backend: 'kubernetes',
      size: 10,
      storage_class_name: 'fast',
      access_modes: ['ReadWriteMany'],
      read_only: true,
    });
    expect(externalVolumeId(volume as { claim_name?: string })).toBeUndefined();
  });

  test('an existing claim is registered by claim_name, its external id', () => {
    const volume = parseConfiguration(
      'type: volume\nbackend: kubernetes\nregion: cluster-a\nclaim_name: shared\n',
    );
    expect(externalVolumeId(volume as { claim_name?: string })).toBe('shared');
  });

  test('without a region it is in the kubeconfig\'s current context (region ""), as in dstack', () => {
    const volume = parseConfiguration('type: volume\nbackend: kubernetes\nsize: 1\n');
    expect(volume).toMatchObject({ backend: 'kubernetes', region: '' });
  });

  test.each([
    [
      'size or claim_name missing',
      'type: volume\nbackend: kubernetes\nregion: c\n',
      ['size'],
      "either 'size' (to create a PersistentVolumeClaim) or 'claim_name' (to register one) is required",
    ],
    [
      'volume_id on kubernetes',
      'type: volume\nbackend: kubernetes\nregion: c\nvolume_id: pvc-1\n',
      ['volume_id'],
      "use 'claim_name' to register an existing PersistentVolumeClaim",
    ],
    [
      'availability_zone on kubernetes',
      'type: volume\nbackend: kubernetes\nregion: c\nsize: 1\navailability_zone: z\n',
      ['availability_zone'],
      'not a zone',
    ],
    [
      'a creation field with claim_name',
      'type: volume\nbackend: kubernetes\nregion: c\nclaim_name: shared\nstorage_class_name: fast\n',
      ['storage_class_name'],
      "the registered claim 'shared' has its own",
    ],
    [
      'no region on another backend',
      'type: volume\nbackend: aws\nsize: 10\n',
      ['region'],
      "required field 'region' is missing",
    ],
    [
      'a kubernetes field on another backend',
      'type: volume\nbackend: aws\nregion: eu-west-1\nsize: 10\nclaim_name: x\n',
      ['claim_name'],
      "only a kubernetes volume has 'claim_name'",
    ],
    [
      'an unknown access mode',
      'type: volume\nbackend: kubernetes\nregion: c\nsize: 1\naccess_modes: [ReadWriteSome]\n',
      ['access_modes', 0],
      'expected ReadWriteOnce, ReadOnlyMany, ReadWriteMany or ReadWriteOncePod',
    ],
  ])('refuses %s, naming the field', (_name, text, path, message) => {
    const error = refusal(text);
    expect(error.path).toEqual(path);
    expect(error.message).toContain(message);
  });
});
