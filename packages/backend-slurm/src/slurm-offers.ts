/**
 * Offers from a cluster's nodes, as dstack's `SlurmCompute` makes them: one offer per node, in
 * the region named after the cluster, priced 0 (the cluster is the team's own), its partitions as
 * availability zones, sized to what the job asks for (`--cpus-per-task`, `--mem`, `--gres`)
 * rather than the whole node, since Slurm gives a job only what it asked for.
 */
import { createCatalogItem, matches } from '@dstack/catalog';
import {
  type Gpu,
  type InstanceOfferWithAvailability,
  type Requirements,
  requirementsToQueryFilter,
  withAvailability,
} from '@dstack/core';
import { gresGpuCount, type SlurmNode } from './slurm-commands.js';
import { SLURM_BACKEND_TYPE, type SlurmClusterConfig } from './slurm-config.js';
import { parseGpuModel } from './slurm-gpu-models.js';

/** dstack's default memory (`DEFAULT_MEMORY_SIZE`): `--mem=0` would mean "all of the node". */
const DEFAULT_MEMORY_GIB = 8;

/** What a job asks Slurm for (dstack's `RequestedResources`). */
export interface RequestedResources {
  cpuCount: number;
  memoryMib: number;
  gpuCount: number;
}

/** The smallest resources the requirements accept: what the job asks Slurm for. */
export function requestedResources(requirements: Requirements): RequestedResources {
  const { cpu, memory, gpu } = requirements.resources;
  let memoryGib = memory.min ?? DEFAULT_MEMORY_GIB;
  if (memory.max != null) memoryGib = Math.min(memoryGib, memory.max);
  return {
    cpuCount: cpu.count.min ?? 1,
    memoryMib: Math.round(memoryGib * 1024),
    gpuCount: gpu?.count.min ?? 0,
  };
}

/** A cluster's partition map: which GPU model each GPU partition has. */
export function gpuModelsByPartition(
  cluster: Pick<SlurmClusterConfig, 'name' | 'gpu_partitions'>,
): Map<string, Gpu> {
  const byPartition = new Map<string, Gpu>();
  for (const entry of cluster.gpu_partitions ?? []) {
    const model = parseGpuModel(entry.gpu);
    for (const partition of entry.partitions) {
      const other = byPartition.get(partition);
      if (other && other.name !== model.name) {
        throw new Error(
          `partition "${partition}" of cluster "${cluster.name}" has two GPU models: ${other.name}, ${model.name}`,
        );
      }
      byPartition.set(partition, model);
    }
  }
  return byPartition;
}

/**
 * The partitions a job may go to (dstack's `_get_cluster_partitions`): GPU jobs to the GPU
 * partitions, CPU jobs to `cpu_partitions`, or when that is absent to every partition but the
 * GPU ones; always among those the cluster has.
 */
export function eligiblePartitions(
  cluster: Pick<SlurmClusterConfig, 'cpu_partitions'>,
  gpuModels: ReadonlyMap<string, Gpu>,
  discovered: readonly string[],
  requested: RequestedResources,
): Set<string> {
  const found = new Set(discovered);
  if (requested.gpuCount > 0) return new Set([...gpuModels.keys()].filter((name) => found.has(name)));
  if (cluster.cpu_partitions != null) {
    return new Set(cluster.cpu_partitions.filter((name) => found.has(name)));
  }
  return new Set(discovered.filter((name) => !gpuModels.has(name)));
}

function cpuArchitecture(arch: string | null): 'x86' | 'arm' {
  return arch === 'aarch64' || arch === 'arm64' ? 'arm' : 'x86';
}

/** States in which a node takes no job. */
const UNAVAILABLE_NODE_STATE = /DOWN|DRAIN|FAIL|NOT_RESPONDING|POWER|FUTURE|MAINT|RESERVED/;

/** The node's GPUs: its GRES count of the model its partitions map to (none when unmapped). */
function nodeGpus(node: SlurmNode, gpuModels: ReadonlyMap<string, Gpu>): Gpu[] {
  const count = node.gres.reduce((sum, gres) => sum + gresGpuCount(gres), 0);
  const models = new Set(node.partitions.flatMap((partition) => gpuModels.get(partition) ?? []));
  if (count === 0 || models.size !== 1) return [];
  const [model] = models as Set<Gpu> & Iterable<Gpu>;
  return Array.from({ length: count }, () => ({ ...(model as Gpu) }));
}

/** The offers of one cluster's nodes that fit the requirements, each sized to the request. */
export function clusterOffers(
  cluster: Pick<SlurmClusterConfig, 'name' | 'cpu_partitions'>,
  gpuModels: ReadonlyMap<string, Gpu>,
  nodes: readonly SlurmNode[],
  discoveredPartitions: readonly string[],
  requirements: Requirements,
): InstanceOfferWithAvailability[] {
  const requested = requestedResources(requirements);
  const partitions = eligiblePartitions(cluster, gpuModels, discoveredPartitions, requested);
  const filter = requirementsToQueryFilter(requirements, { provider: SLURM_BACKEND_TYPE });
  // Slurm allocates no disk: a job gets the node's file systems, as in dstack (disk size 0).
  delete filter.minDiskSize;
  delete filter.maxDiskSize;
  const offers: InstanceOfferWithAvailability[] = [];
  for (const node of nodes) {
    const zones = node.partitions.filter((partition) => partitions.has(partition));
    if (zones.length === 0) continue;
    const gpus = nodeGpus(node, gpuModels);
    if (
      node.cpus < requested.cpuCount ||
      node.memoryMib < requested.memoryMib ||
      gpus.length < requested.gpuCount
    ) {
      continue;
    }
    // The offer is the slice the job gets (dstack's offer modifier), and the requirements are
    // matched against that slice, as dstack filters offers after modifying them.
    const slice = gpus.slice(0, requested.gpuCount);
    const [gpu] = slice;
    const item = createCatalogItem({
      provider: SLURM_BACKEND_TYPE,
      instanceName: node.name,
      location: cluster.name,
      price: 0,
      cpu: requested.cpuCount,
      memory: requested.memoryMib / 1024,
      gpuCount: slice.length,
      gpuName: gpu?.name ?? null,
      gpuMemory: gpu ? gpu.memory_mib / 1024 : null,
      gpuVendor: gpu?.vendor ?? null,
      cpuArch: cpuArchitecture(node.arch),
    });
    if (!matches(item, filter)) continue;
    const offer = {
      backend: SLURM_BACKEND_TYPE,
      instance: {
        name: node.name,
        resources: {
          cpus: requested.cpuCount,
          memory_mib: requested.memoryMib,
          gpus: slice,
          spot: false,
          disk: { size_mib: 0 },
          cpu_arch: item.cpuArch,
        },
      },
      region: cluster.name,
      price: 0,
      backend_data: {},
    };
    const availability = UNAVAILABLE_NODE_STATE.test(node.state) ? 'not_available' : 'available';
    offers.push(
      withAvailability(offer, availability, { availability_zones: zones, instance_runtime: 'runner' }),
    );
  }
  return offers;
}
