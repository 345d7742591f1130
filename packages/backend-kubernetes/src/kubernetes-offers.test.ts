import { describe, expect, it } from 'vitest';
import type { KubernetesObject } from './kubernetes-api.js';
import { amdGpuOf, nodeCatalogItem, nvidiaGpuOf, requestedByNode } from './kubernetes-offers.js';
import { podFailure, unschedulableReason } from './kubernetes-pod-failures.js';
import { parseQuantity } from './kubernetes-quantity.js';

function node(name: string, allocatable: Record<string, string>, extra: Partial<KubernetesObject> = {}) {
  return {
    metadata: { name, labels: {} },
    spec: {},
    status: { allocatable, nodeInfo: { architecture: 'amd64' } },
    ...extra,
  } as KubernetesObject;
}

describe('parseQuantity', () => {
  it('reads binary, decimal and exponent suffixes and refuses anything else', () => {
    expect(parseQuantity('3900m')).toBeCloseTo(3.9);
    expect(parseQuantity('16Gi')).toBe(16 * 2 ** 30);
    expect(parseQuantity('2k')).toBe(2000);
    expect(parseQuantity('1e3')).toBe(1000);
    expect(parseQuantity('8')).toBe(8);
    expect(() => parseQuantity('8 cores')).toThrow('not a Kubernetes quantity: "8 cores"');
  });
});

describe('nodeCatalogItem', () => {
  it('offers allocatable CPU, memory and ephemeral storage less what running pods request', () => {
    const pods = [
      {
        spec: { nodeName: 'n1', containers: [{ resources: { requests: { cpu: '1500m', memory: '1Gi' } } }] },
        status: { phase: 'Running' },
      },
      {
        spec: { nodeName: 'n1', containers: [{ resources: { requests: { cpu: '4' } } }] },
        status: { phase: 'Succeeded' },
      },
    ] as KubernetesObject[];

    const item = nodeCatalogItem(
      node('n1', { cpu: '8', memory: '32Gi', 'ephemeral-storage': '100Gi' }),
      'main',
      requestedByNode(pods).get('n1'),
    );

    expect(item).toMatchObject({
      instanceName: 'n1',
      location: 'main',
      price: 0,
      cpu: 6,
      memory: 31,
      diskSize: 100,
      gpuCount: 0,
      cpuArch: 'x86',
    });
  });

  it('skips nodes with a hard taint it does not tolerate, keeps GPU-tainted and soft-tainted ones', () => {
    const tainted = (key: string, effect: string) =>
      node('n', { cpu: '1', memory: '1Gi' }, { spec: { taints: [{ key, effect }] } });

    expect(
      nodeCatalogItem(tainted('node-role.kubernetes.io/master', 'NoSchedule'), '', undefined),
    ).toBeNull();
    expect(nodeCatalogItem(tainted('nvidia.com/gpu', 'NoSchedule'), '', undefined)).not.toBeNull();
    expect(nodeCatalogItem(tainted('spot', 'PreferNoSchedule'), '', undefined)).not.toBeNull();
  });

  it('counts GPUs of a known model from the device plugin resource and the product label', () => {
    const gpuNode = node(
      'g',
      { cpu: '32', memory: '256Gi', 'nvidia.com/gpu': '8' },
      { metadata: { name: 'g', labels: { 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-40GB' } } },
    );

    expect(nodeCatalogItem(gpuNode, '', undefined)).toMatchObject({
      gpuCount: 8,
      gpuName: 'A100',
      gpuMemory: 40,
      gpuVendor: 'nvidia',
    });
    expect(nvidiaGpuOf({ 'nvidia.com/gpu.product': 'Tesla-T4' })).toMatchObject({ name: 'T4' });
    expect(nvidiaGpuOf({ 'nvidia.com/gpu.product': 'Unknown-Accelerator' })).toBeNull();
    expect(amdGpuOf({ 'beta.amd.com/gpu.device-id.74a1': '8' })).toMatchObject({
      vendor: 'amd',
      name: 'MI300X',
    });
  });
});

describe('pod failures', () => {
  it("reports an image the kubelet cannot pull and a failed pod in the cluster's words", () => {
    const pulling = {
      metadata: { name: 'p' },
      status: {
        phase: 'Pending',
        containerStatuses: [
          {
            image: 'x',
            state: { waiting: { reason: 'ErrImageNeverPull', message: 'image "x" not present' } },
          },
        ],
      },
    } as KubernetesObject;
    const evicted = {
      metadata: { name: 'p' },
      status: { phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory.' },
    } as KubernetesObject;

    expect(podFailure(pulling)).toBe('pod p: ErrImageNeverPull (image x): image "x" not present');
    expect(podFailure(evicted)).toBe('pod p failed: Evicted: The node was low on resource: memory.');
    expect(podFailure({ metadata: { name: 'p' }, status: { phase: 'Running' } })).toBeNull();
  });

  it('reports an unschedulable pod only after the scheduling timeout', () => {
    const created = '2026-01-01T00:00:00Z';
    const pod = {
      metadata: { name: 'p', creationTimestamp: created },
      status: {
        conditions: [
          {
            type: 'PodScheduled',
            status: 'False',
            reason: 'Unschedulable',
            message: '0/1 nodes are available.',
          },
        ],
      },
    } as KubernetesObject;
    const start = Date.parse(created);

    expect(unschedulableReason(pod, 10_000, start + 5_000)).toBeNull();
    expect(unschedulableReason(pod, 10_000, start + 11_000)).toBe('Unschedulable: 0/1 nodes are available.');
  });
});
