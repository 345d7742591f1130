import { describe, expect, it } from 'vitest';
import { DEFAULT_JOB_IMAGE, defaultJobImage, isDefaultJobImage } from './default-image.js';

describe('the default image', () => {
  it("is dstack 0.21's base image when nothing is chosen", () => {
    expect(DEFAULT_JOB_IMAGE).toBe('dstackai/base:0.15-base-ubuntu24.04');
    expect(defaultJobImage()).toBe(DEFAULT_JOB_IMAGE);
  });

  it('is the devel variant with nvcc, and takes a mirror, a version and an Ubuntu', () => {
    expect(defaultJobImage({ nvcc: true })).toBe('dstackai/base:0.15-devel-ubuntu24.04');
    expect(
      defaultJobImage({ baseImage: '127.0.0.1:5000/dstackai/base', version: '0.16', ubuntuVersion: '22.04' }),
    ).toBe('127.0.0.1:5000/dstackai/base:0.16-base-ubuntu22.04');
  });

  it('is recognised in every variant, and other images are not', () => {
    for (const nvcc of [false, true]) {
      expect(isDefaultJobImage(defaultJobImage({ nvcc }))).toBe(true);
      expect(isDefaultJobImage(defaultJobImage({ nvcc, baseImage: 'mirror.internal:5000/base' }))).toBe(true);
    }
    for (const image of [
      'python:3.11',
      'ubuntu',
      'dstackai/base',
      'dstackai/base:latest',
      'dstackai/dind',
      'a:5000/b',
      'dstackai/base:py3.12-0.10-cuda-12.1',
    ]) {
      expect(isDefaultJobImage(image), image).toBe(false);
    }
  });
});
