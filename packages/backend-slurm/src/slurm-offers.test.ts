import { RequirementsSchema } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { gresGpuCount, isFinalJobState, parseNode } from './slurm-commands.js';
import { parseGpuModel } from './slurm-gpu-models.js';
import { clusterOffers, gpuModelsByPartition } from './slurm-offers.js';

// `scontrol show -o node` lines as Slurm 22.05 prints them (the first from the test cluster).
const CPU_NODE =
  'NodeName=dstack-node Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=6.77 AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=vm Version=22.05.8 OS=Linux 6.18.44 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=21694 AllocMem=0 FreeMem=15394 Sockets=2 Boards=1 State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=debug  BootTime=2026-12-06T09:10:28';
const GPU_NODE =
  'NodeName=gpu-1 Arch=x86_64 CPUEfctv=64 CPUTot=64 Gres=gpu:a100:4(S:0-1) NodeAddr=gpu-1 NodeHostName=gpu-1 RealMemory=512000 State=MIXED Partitions=gpu,all';
const DRAINED_NODE =
  'NodeName=cpu-9 Arch=aarch64 CPUTot=16 Gres=(null) NodeAddr=10.1.0.9 RealMemory=64000 State=IDLE+DRAIN Partitions=cpu,all';

const requirements = (resources: Record<string, unknown>) =>
  RequirementsSchema.parse({
    resources: { cpu: { count: { min: 1 } }, memory: { min: null }, ...resources },
  });

describe('reading Slurm', () => {
  it('parses scontrol show node lines, values with spaces included', () => {
    expect(parseNode(CPU_NODE)).toEqual({
      name: 'dstack-node',
      arch: 'x86_64',
      cpus: 2,
      memoryMib: 21694,
      gres: [],
      partitions: ['debug'],
      state: 'IDLE',
      address: '127.0.0.1',
    });
    expect(parseNode(GPU_NODE)).toMatchObject({ gres: ['gpu:a100:4(S:0-1)'], partitions: ['gpu', 'all'] });
    expect(() => parseNode('NodeName=x CPUTot=2')).toThrow(/RealMemory/);
  });

  it('counts GPUs of GRES entries and knows final job states', () => {
    expect(gresGpuCount('gpu:8')).toBe(8);
    expect(gresGpuCount('gpu:a100:4(S:0-1)')).toBe(4);
    expect(gresGpuCount('mps:100')).toBe(0);
    expect(isFinalJobState('CANCELLED by 1000')).toBe(true);
    expect(isFinalJobState('COMPLETING')).toBe(false);
    expect(isFinalJobState('PENDING')).toBe(false);
  });

  it("reads GPU models as dstack's [vendor:]name[:memory]", () => {
    expect(parseGpuModel('A100:80GB')).toEqual({ vendor: 'nvidia', name: 'A100', memory_mib: 80 * 1024 });
    expect(parseGpuModel('amd:MI300X')).toMatchObject({ vendor: 'amd', name: 'MI300X' });
    expect(parseGpuModel('nvidia:Custom:24GB')).toEqual({
      vendor: 'nvidia',
      name: 'Custom',
      memory_mib: 24 * 1024,
    });
    expect(() => parseGpuModel('A100')).toThrow(/several GPU models/);
    expect(() => parseGpuModel('NoSuchGPU')).toThrow(/no known GPU model/);
  });
});

describe('offers of a cluster', () => {
  const cluster = {
    name: 'main',
    cpu_partitions: null,
    gpu_partitions: [{ gpu: 'A100:80GB', partitions: ['gpu'] }],
  };
  const models = gpuModelsByPartition(cluster);
  const nodes = [CPU_NODE, GPU_NODE, DRAINED_NODE].map(parseNode);
  const partitions = ['debug', 'gpu', 'all', 'cpu'];

  it('offer each node that fits as the slice the job asks for, in its CPU partitions, priced 0', () => {
    const offers = clusterOffers(
      cluster,
      models,
      nodes,
      partitions,
      requirements({ cpu: { count: { min: 2 } }, memory: { min: 1 } }),
    );

    expect(
      offers.map((offer) => [offer.instance.name, offer.availability_zones, offer.availability]),
    ).toEqual([
      ['dstack-node', ['debug'], 'available'],
      ['gpu-1', ['all'], 'available'],
      ['cpu-9', ['cpu', 'all'], 'not_available'],
    ]);
    expect(offers[0]).toMatchObject({
      backend: 'slurm',
      region: 'main',
      price: 0,
      instance_runtime: 'runner',
      instance: { resources: { cpus: 2, memory_mib: 1024, gpus: [], disk: { size_mib: 0 } } },
    });
    expect(offers[2]?.instance.resources.cpu_arch).toBe('arm');
  });

  it('send GPU jobs only to the GPU partitions, with the mapped model', () => {
    const offers = clusterOffers(
      cluster,
      models,
      nodes,
      partitions,
      requirements({ gpu: { count: { min: 2 } } }),
    );

    expect(offers.map((offer) => [offer.instance.name, offer.availability_zones])).toEqual([
      ['gpu-1', ['gpu']],
    ]);
    expect(offers[0]?.instance.resources.gpus).toEqual([
      { vendor: 'nvidia', name: 'A100', memory_mib: 81920 },
      { vendor: 'nvidia', name: 'A100', memory_mib: 81920 },
    ]);
    expect(
      clusterOffers(
        cluster,
        models,
        nodes,
        partitions,
        requirements({ gpu: { name: ['H100'], count: { min: 1 } } }),
      ),
    ).toEqual([]);
  });

  it('keep CPU jobs to cpu_partitions when set, and leave out nodes too small', () => {
    const only = { ...cluster, cpu_partitions: ['cpu'] };
    expect(
      clusterOffers(only, models, nodes, partitions, requirements({ cpu: { count: { min: 1 } } })).map(
        (offer) => offer.instance.name,
      ),
    ).toEqual(['cpu-9']);
    expect(
      clusterOffers(cluster, models, nodes, partitions, requirements({ cpu: { count: { min: 32 } } })).map(
        (offer) => offer.instance.name,
      ),
    ).toEqual(['gpu-1']);
  });
});
