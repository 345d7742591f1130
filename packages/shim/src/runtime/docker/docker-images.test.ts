import { describe, expect, it } from 'vitest';
import { encodeRegistryAuth, findProgressError, parseImageReference } from './docker-images.js';

describe('parseImageReference', () => {
  it.each([
    ['ubuntu', { repository: 'ubuntu', tag: 'latest', registry: 'docker.io' }],
    ['ubuntu:22.04', { repository: 'ubuntu', tag: '22.04', registry: 'docker.io' }],
    ['dstackai/base:py3.12', { repository: 'dstackai/base', tag: 'py3.12', registry: 'docker.io' }],
    ['ghcr.io/org/app', { repository: 'ghcr.io/org/app', tag: 'latest', registry: 'ghcr.io' }],
    [
      'registry.local:5000/team/app:v1',
      { repository: 'registry.local:5000/team/app', tag: 'v1', registry: 'registry.local:5000' },
    ],
    ['localhost/app:dev', { repository: 'localhost/app', tag: 'dev', registry: 'localhost' }],
    ['localhost:1/a/b', { repository: 'localhost:1/a/b', tag: 'latest', registry: 'localhost:1' }],
    [
      'nvcr.io/nvidia/pytorch@sha256:abc123',
      { repository: 'nvcr.io/nvidia/pytorch', tag: 'sha256:abc123', registry: 'nvcr.io' },
    ],
  ])('splits %s', (imageName, expected) => {
    expect(parseImageReference(imageName)).toEqual(expected);
  });
});

describe('encodeRegistryAuth', () => {
  it('encodes the credentials as base64url JSON with the registry address', () => {
    const header = encodeRegistryAuth('user', 'p+ss/word?', 'ghcr.io');
    expect(header).not.toMatch(/[+/=]/);
    expect(JSON.parse(Buffer.from(header, 'base64url').toString('utf8'))).toEqual({
      username: 'user',
      password: 'p+ss/word?',
      serveraddress: 'ghcr.io',
    });
  });
});

describe('findProgressError', () => {
  it('finds the error a failed pull reports in its progress stream', () => {
    const progress = [
      '{"status":"Pulling from library/ubuntu","id":"22.04"}',
      '{"errorDetail":{"message":"unauthorized: access denied"},"error":"unauthorized: access denied"}',
      '',
    ].join('\n');
    expect(findProgressError(progress)).toBe('unauthorized: access denied');
  });

  it('finds nothing in a successful pull', () => {
    expect(findProgressError('{"status":"Status: Image is up to date for ubuntu:22.04"}\n')).toBeUndefined();
  });
});
