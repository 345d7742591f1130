/**
 * Offers from a cluster's nodes, as dstack's `get_instance_offers`: one per schedulable node
 * (no untolerated NoSchedule/NoExecute taint), sized by its allocatable CPU, memory, ephemeral
 * storage and GPUs (`nvidia.com/gpu` with GPU Feature Discovery's product label, `amd.com/gpu`
 * with the AMD device-id labels), less what the pods running there request when asked for
 * unallocated resources. Price 0: the cluster is the team's own.
 */
import { type CatalogItem, createCatalogItem, KNOWN_AMD_GPUS, KNOWN_NVIDIA_GPUS } from '@dstack/catalog';
import type { Gpu } from '@dstack/core';
import type { KubernetesObject } from './kubernetes-api.js';
import { KUBERNETES_BACKEND_TYPE } from './kubernetes-config.js';
import { parseQuantity } from './kubernetes-quantity.js';

export const NVIDIA_GPU_RESOURCE = 'nvidia.com/gpu';
export const AMD_GPU_RESOURCE = 'amd.com/gpu';
export const NVIDIA_GPU_PRODUCT_LABEL = `${NVIDIA_GPU_RESOURCE}.product`;
export const AMD_GPU_DEVICE_ID_LABEL_PREFIX = `beta.${AMD_GPU_RESOURCE}.device-id.`;
/** Taints dstack tolerates: those GPU operators put on GPU nodes. */
export const TOLERATED_TAINT_KEYS: readonly string[] = [NVIDIA_GPU_RESOURCE, AMD_GPU_RESOURCE];

/** What a node has (or pods request), in base units: cores, bytes, bytes, devices. */
export interface NodeResources {
  cpu: number;
  memory: number;
  ephemeralStorage: number;
  nvidiaGpu: number;
  amdGpu: number;
}

const EMPTY: NodeResources = { cpu: 0, memory: 0, ephemeralStorage: 0, nvidiaGpu: 0, amdGpu: 0 };

/** A resource map (`allocatable`, a container's `requests`) in base units. */
export function resourcesOf(map: Record<string, string> | undefined | null): NodeResources {
  const quantity = (key: string) => (map?.[key] === undefined ? 0 : parseQuantity(map[key]));
  return {
    cpu: quantity('cpu'),
    memory: quantity('memory'),
    ephemeralStorage: quantity('ephemeral-storage'),
    nvidiaGpu: quantity(NVIDIA_GPU_RESOURCE),
    amdGpu: quantity(AMD_GPU_RESOURCE),
  };
}

function combine(a: NodeResources, b: NodeResources, sign: 1 | -1): NodeResources {
  return {
    cpu: a.cpu + sign * b.cpu,
    memory: a.memory + sign * b.memory,
    ephemeralStorage: a.ephemeralStorage + sign * b.ephemeralStorage,
    nvidiaGpu: a.nvidiaGpu + sign * b.nvidiaGpu,
    amdGpu: a.amdGpu + sign * b.amdGpu,
  };
}

/** A taint that keeps pods off (NoSchedule, NoExecute, or an effect dstack does not know). */
export function isHardTaint(taint: { effect?: string }): boolean {
  return taint.effect !== 'PreferNoSchedule';
}

/** What the unfinished pods on each node request, by node name (dstack's allocated resources). */
export function requestedByNode(pods: readonly KubernetesObject[]): Map<string, NodeResources> {
  const byNode = new Map<string, NodeResources>();
  for (const pod of pods) {
    const phase = pod.status?.phase;
    const node = pod.spec?.nodeName;
    if (phase === 'Succeeded' || phase === 'Failed' || typeof node !== 'string') continue;
    let requested = byNode.get(node) ?? EMPTY;
    for (const container of pod.spec?.containers ?? []) {
      requested = combine(requested, resourcesOf(container.resources?.requests), 1);
    }
    byNode.set(node, requested);
  }
  return byNode;
}

/** The NVIDIA GPU of GPU Feature Discovery's product label (`Tesla-T4`, `NVIDIA-A100-SXM4-40GB`). */
export function nvidiaGpuOf(labels: Record<string, string>): Gpu | null {
  const product = labels[NVIDIA_GPU_PRODUCT_LABEL];
  if (product === undefined) return null;
  const words = product.replace('RTX-', 'RTX').toLowerCase().split('-');
  const known = KNOWN_NVIDIA_GPUS.filter((gpu) => words.includes(gpu.name.toLowerCase()));
  if (known.length === 0) return null;
  const name = known[0]?.name ?? '';
  const memoryGib = product.includes('40GB') ? 40 : Math.max(...known.map((gpu) => gpu.memory));
  return { vendor: 'nvidia', name, memory_mib: memoryGib * 1024 };
}

/** The AMD GPU of the device-id labels, when they name one known model. */
export function amdGpuOf(labels: Record<string, string>): Gpu | null {
  const models = new Set<string>();
  for (const label of Object.keys(labels)) {
    if (!label.startsWith(AMD_GPU_DEVICE_ID_LABEL_PREFIX)) continue;
    const deviceId = Number.parseInt(label.slice(label.lastIndexOf('.') + 1), 16);
    const gpu = KNOWN_AMD_GPUS.find((each) =>
      each.deviceIds.some((id) => Number.parseInt(id, 16) === deviceId),
    );
    if (gpu) models.add(gpu.name);
  }
  if (models.size !== 1) return null;
  const gpu = KNOWN_AMD_GPUS.find((each) => models.has(each.name));
  return gpu ? { vendor: 'amd', name: gpu.name, memory_mib: gpu.memory * 1024 } : null;
}

/**
 * The node as a catalog row of `region` (for the catalog's requirement matching), or null when
 * an untolerated taint keeps pods off it. `requested` is subtracted from its allocatable.
 */
export function nodeCatalogItem(
  node: KubernetesObject,
  region: string,
  requested: NodeResources | undefined,
): CatalogItem | null {
  const name = node.metadata?.name;
  if (!name || node.spec?.unschedulable === true) return null;
  const taints: Array<{ key?: string; effect?: string }> = node.spec?.taints ?? [];
  if (taints.some((taint) => isHardTaint(taint) && !TOLERATED_TAINT_KEYS.includes(taint.key ?? '')))
    return null;
  let free = resourcesOf(node.status?.allocatable);
  if (requested) free = combine(free, requested, -1);
  const labels = node.metadata?.labels ?? {};
  let gpu: Gpu | null = null;
  let gpuCount = 0;
  if (free.nvidiaGpu >= 1) {
    gpu = nvidiaGpuOf(labels);
    gpuCount = Math.floor(free.nvidiaGpu);
  } else if (free.amdGpu >= 1) {
    gpu = amdGpuOf(labels);
    gpuCount = Math.floor(free.amdGpu);
  }
  if (gpu === null) gpuCount = 0;
  const architecture = node.status?.nodeInfo?.architecture;
  return createCatalogItem({
    provider: KUBERNETES_BACKEND_TYPE,
    instanceName: name,
    location: region,
    price: 0,
    cpu: Math.max(0, Math.floor(free.cpu)),
    memory: Math.max(0, Math.floor(free.memory / 2 ** 20)) / 1024,
    diskSize: Math.max(0, Math.floor(free.ephemeralStorage / 2 ** 20)) / 1024,
    gpuCount,
    gpuName: gpu?.name ?? null,
    gpuMemory: gpu ? gpu.memory_mib / 1024 : null,
    gpuVendor: gpu?.vendor ?? null,
    cpuArch: architecture === 'arm64' ? 'arm' : 'x86',
    spot: false,
  });
}
