import { describe, expect, it } from 'vitest';
import {
  encodeRegistryAuth,
  findProgressError,
  parseImageReference,
  pullFailureCause,
} from './docker-images.js';

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
  it('encodes the credentials as padded base64url JSON with the registry address', () => {
    // 70 bytes of JSON: the last group is padded.
    const header = encodeRegistryAuth('user', 'p+ss/word?!', 'ghcr.io');
    // Docker 20.10 decodes the header with Go's padded base64.URLEncoding and, when that fails,
    // pulls without credentials: the padding must be there.
    expect(header).not.toMatch(/[+/]/);
    expect(header.length % 4).toBe(0);
    expect(header).toMatch(/=$/);
    expect(JSON.parse(Buffer.from(header, 'base64url').toString('utf8'))).toEqual({
      username: 'user',
      password: 'p+ss/word?!',
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

describe('pullFailureCause', () => {
  // Docker 20.10's own messages, as a pull from docker-registry and Docker Hub gives them.
  it('tells refused credentials, missing credentials and a missing image apart', () => {
    expect(pullFailureCause('unauthorized: authentication required', true)).toBe(
      'the registry refused the credentials (registry_auth)',
    );
    expect(
      pullFailureCause('Head "http://127.0.0.1:5000/v2/img/manifests/v1": no basic auth credentials', false),
    ).toBe('the registry requires credentials: set registry_auth');
    expect(
      pullFailureCause(
        'manifest for 127.0.0.1:5000/img:v2 not found: manifest unknown: manifest unknown',
        true,
      ),
    ).toBe('the image does not exist in its registry');
    expect(
      pullFailureCause(
        "pull access denied for nosuch/image, repository does not exist or may require 'docker login'",
        false,
      ),
    ).toContain('does not exist or needs credentials');
    expect(pullFailureCause('dial tcp 127.0.0.1:1: connect: connection refused', false)).toBeNull();
  });
});
