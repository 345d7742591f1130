/**
 * Compute's quotas in the emulator: each metric's limit, what the live instances of a region use,
 * and what an instance takes (its vCPUs, its built-in and guest GPUs).
 */

import { DEFAULT_GCP_QUOTA_LIMIT, type GcpComputeProject } from './gcp-compute-project.js';
import { gpuQuotaMetric, lastSegment } from './gcp-compute-resources.js';
import { regionOfZone } from './gcp-emulator-data.js';
import type { GcpProvisioningModel } from './gcp-emulator-faults.js';

export function quotaLimit(project: GcpComputeProject, metric: string): number {
  return project.quotas[metric] ?? (metric.endsWith('CPUS') ? 1000 : DEFAULT_GCP_QUOTA_LIMIT);
}

/** What the live instances of `region` use of `metric`. */
export function quotaUsage(project: GcpComputeProject, region: string, metric: string): number {
  let usage = 0;
  for (const instance of project.instances.all()) {
    if (regionOfZone(instance.zone) !== region) continue;
    const status = project.instances.status(instance);
    if (status === undefined || status === 'TERMINATED') continue;
    for (const [each, amount] of quotaNeeds(
      project,
      instance.machineType,
      instance.body,
      instance.provisioningModel,
    )) {
      if (each === metric) usage += amount;
    }
  }
  return usage;
}

/** The quota metrics an instance takes, with how much: its vCPUs and its GPUs (built in or guest). */
export function quotaNeeds(
  project: GcpComputeProject,
  machineType: string,
  body: Readonly<Record<string, unknown>>,
  provisioningModel: GcpProvisioningModel,
): [string, number][] {
  const spot = provisioningModel === 'SPOT';
  const spec = project.data.machineTypes.get(machineType);
  const needs: [string, number][] = [[spot ? 'PREEMPTIBLE_CPUS' : 'CPUS', spec?.vcpus ?? 0]];
  if (spec?.accelerators) needs.push([gpuQuotaMetric(spec.accelerators.type, spot), spec.accelerators.count]);
  for (const guest of guestAccelerators(body)) needs.push([gpuQuotaMetric(guest.type, spot), guest.count]);
  return needs;
}

interface GuestAccelerator {
  readonly type: string;
  readonly count: number;
}

export function guestAccelerators(body: Readonly<Record<string, unknown>>): GuestAccelerator[] {
  const list = body.guestAccelerators;
  if (!Array.isArray(list)) return [];
  return list.map((each: { acceleratorType?: unknown; acceleratorCount?: unknown }) => ({
    type: lastSegment(String(each.acceleratorType ?? '')),
    count: Number(each.acceleratorCount ?? 1),
  }));
}
