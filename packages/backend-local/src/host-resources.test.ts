import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { detectHostResources, normalizeNvidiaGpuName, parseNvidiaSmiGpus } from './host-resources.js';

const temporaryDirectories: string[] = [];
afterEach(async () => {
  await Promise.all(temporaryDirectories.splice(0).map((path) => rm(path, { recursive: true, force: true })));
});

async function temporaryDirectory(): Promise<string> {
  const path = await mkdtemp(join(tmpdir(), 'dstack-host-'));
  temporaryDirectories.push(path);
  return path;
}

describe('detectHostResources', () => {
  it('reads CPUs, memory and the disk of the nearest existing parent', async () => {
    const directory = await temporaryDirectory();

    const resources = await detectHostResources({
      instancesDir: join(directory, 'not', 'created', 'yet'),
      nvidiaSmiCommand: join(directory, 'no-nvidia-smi'),
    });

    expect(resources.cpuCount).toBe(availableParallelism());
    expect(resources.memoryGib).toBeCloseTo(totalmem() / 1024 ** 3, 5);
    expect(resources.diskGib).toBeGreaterThan(0);
    expect(['x86', 'arm']).toContain(resources.cpuArch);
    expect(resources.gpus).toEqual([]);
  });

  it('reads GPUs from nvidia-smi', async () => {
    const directory = await temporaryDirectory();
    const fakeNvidiaSmi = join(directory, 'nvidia-smi');
    await writeFile(
      fakeNvidiaSmi,
      '#!/bin/sh\nprintf "NVIDIA A100-SXM4-80GB, 81920\\nNVIDIA A100-SXM4-80GB, 81920\\n"\n',
    );
    await chmod(fakeNvidiaSmi, 0o755);

    const resources = await detectHostResources({ instancesDir: directory, nvidiaSmiCommand: fakeNvidiaSmi });

    expect(resources.gpus).toEqual([
      { name: 'A100', memoryGib: 80, vendor: 'nvidia' },
      { name: 'A100', memoryGib: 80, vendor: 'nvidia' },
    ]);
  });

  it('finds no GPUs when nvidia-smi fails', async () => {
    const directory = await temporaryDirectory();
    const failing = join(directory, 'nvidia-smi');
    await writeFile(failing, '#!/bin/sh\necho "NVIDIA-SMI has failed" >&2\nexit 9\n');
    await chmod(failing, 0o755);

    const resources = await detectHostResources({ instancesDir: directory, nvidiaSmiCommand: failing });

    expect(resources.gpus).toEqual([]);
  });
});

describe('parseNvidiaSmiGpus', () => {
  it('skips lines that do not parse', () => {
    expect(parseNvidiaSmiGpus('garbage\nNVIDIA L4, 23034\n, 5\nNVIDIA T4, n/a\n')).toEqual([
      { name: 'L4', memoryGib: 24, vendor: 'nvidia' },
    ]);
  });
});

describe('normalizeNvidiaGpuName', () => {
  it.each([
    ['NVIDIA A100-SXM4-80GB', 'A100'],
    ['NVIDIA A100-PCIE-40GB', 'A100'],
    ['NVIDIA H100 80GB HBM3', 'H100'],
    ['NVIDIA H100 NVL', 'H100NVL'],
    ['NVIDIA GeForce RTX 4090', 'RTX4090'],
    ['NVIDIA RTX A6000', 'A6000'],
    ['Tesla T4', 'T4'],
    ['NVIDIA A10G', 'A10G'],
    ['NVIDIA L40S', 'L40S'],
    ['NVIDIA Future GPU 9000', 'FutureGPU9000'],
  ])('%s → %s', (reported, expected) => {
    expect(normalizeNvidiaGpuName(reported)).toBe(expected);
  });
});
