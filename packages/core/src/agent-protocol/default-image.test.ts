import { describe, expect, it } from 'vitest';
import { DEFAULT_JOB_IMAGE, defaultJobImage, isDefaultJobImage } from './default-image.js';

describe('the default image', () => {
  it("is dstack's base image for Python 3.12 when nothing is chosen", () => {
    expect(DEFAULT_JOB_IMAGE).toBe('dstackai/base:py3.12-0.10-cuda-12.1');
    expect(defaultJobImage()).toBe(DEFAULT_JOB_IMAGE);
  });

  it("takes `python:` as the tag's Python and a mirror's repository and version", () => {
    expect(defaultJobImage({ python: '3.10' })).toBe('dstackai/base:py3.10-0.10-cuda-12.1');
    expect(defaultJobImage({ python: '3.10', nvcc: true })).toBe('dstackai/base:py3.10-0.10-cuda-12.1-devel');
    expect(
      defaultJobImage({ python: '3.11', baseImage: '127.0.0.1:5000/dstackai/base', version: '0.11' }),
    ).toBe('127.0.0.1:5000/dstackai/base:py3.11-0.11-cuda-12.1');
  });

  it('is recognised in every variant, and other images are not', () => {
    for (const python of ['3.9', '3.10', '3.11', '3.12', '3.13', '3.14']) {
      expect(isDefaultJobImage(defaultJobImage({ python }))).toBe(true);
      expect(isDefaultJobImage(defaultJobImage({ python, baseImage: 'mirror.internal:5000/base' }))).toBe(
        true,
      );
    }
    for (const image of ['python:3.11', 'ubuntu', 'dstackai/base', 'dstackai/base:latest', 'a:5000/b']) {
      expect(isDefaultJobImage(image), image).toBe(false);
    }
  });
});
