import { describe, expect, it } from 'vitest';
import { jobRuntimeOf } from './job-runtime.js';

const runsImages = { imageRefusal: () => null };
const runsNoImages = { imageRefusal: () => 'jobs run as processes' };

describe('jobRuntimeOf', () => {
  it('is a process on a backend that runs no images, with a shim (local process runtime) or without (Slurm)', () => {
    expect(jobRuntimeOf(runsNoImages, { container_id: null })).toBe('process');
    expect(jobRuntimeOf(runsNoImages, null)).toBe('process');
  });

  it('is a process on an instance whose shim started no container (a host without Docker)', () => {
    expect(jobRuntimeOf(runsImages, { container_id: null })).toBe('process');
    expect(jobRuntimeOf({}, { container_id: null })).toBe('process');
  });

  it("is a container in a shim's container, on a container backend, and when the backend is gone", () => {
    expect(jobRuntimeOf(runsImages, { container_id: 'abc123' })).toBe('container');
    expect(jobRuntimeOf({}, null)).toBe('container');
    expect(jobRuntimeOf(null, null)).toBe('container');
  });
});
