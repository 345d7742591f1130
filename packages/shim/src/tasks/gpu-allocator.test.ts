import { describe, expect, it } from 'vitest';
import { GpuAllocator } from './gpu-allocator.js';

describe('GpuAllocator', () => {
  it('gives two one-GPU tasks on a two-GPU host different GPUs, and a third none', () => {
    const gpus = new GpuAllocator(['0', '1']);
    expect(gpus.acquire('a', 1)).toEqual(['0']);
    expect(gpus.acquire('b', 1)).toEqual(['1']);
    expect(() => gpus.acquire('c', 1)).toThrow("the task asks for 1 GPUs but 0 of the host's 2 are free");
  });

  it('hands a released GPU to the next task', () => {
    const gpus = new GpuAllocator(['0', '1']);
    gpus.acquire('a', 1);
    gpus.acquire('b', 1);
    gpus.release('a');
    gpus.release('a');
    expect(gpus.acquire('c', 1)).toEqual(['0']);
  });

  it('gives -1 every free GPU and 0 none', () => {
    const gpus = new GpuAllocator(['0', '1', '2', '3']);
    expect(gpus.acquire('a', 2)).toEqual(['0', '1']);
    expect(gpus.acquire('none', 0)).toEqual([]);
    expect(gpus.acquire('rest', -1)).toEqual(['2', '3']);
  });

  it('assigns nothing when the host GPUs are unknown', () => {
    expect(new GpuAllocator([]).acquire('a', 2)).toBeNull();
  });

  it('gives no GPUs, rather than unknown ones, when it was given none', () => {
    const gpus = new GpuAllocator([], { known: true });
    expect(gpus.acquire('whole', -1)).toEqual([]);
    expect(() => gpus.acquire('a', 1)).toThrow("the task asks for 1 GPUs but 0 of the host's 0 are free");
  });
});
