/**
 * The read-only resources of Compute as the emulator shows them: the project, regions (with their
 * quotas), zones, machine types, accelerator types and images.
 */
import { notFound } from './gcp-api-error.js';
import type { GcpComputeProject, GcpImage } from './gcp-compute-project.js';
import { quotaLimit, quotaUsage } from './gcp-compute-quotas.js';
import { gpuQuotaMetric, link } from './gcp-compute-resources.js';
import { regionOfZone } from './gcp-emulator-data.js';

export function projectResource(project: GcpComputeProject) {
  return {
    kind: 'compute#project',
    id: '918273645546',
    name: project.project,
    creationTimestamp: '2024-01-01T00:00:00.000-08:00',
    selfLink: link(`projects/${project.project}`),
    defaultNetworkTier: 'PREMIUM',
  };
}

/** The region's quotas: CPUS and the GPU metrics of every accelerator it has, with their usage. */
export function regionResource(project: GcpComputeProject, region: string) {
  const zones = project.data.zonesOf(region).map((zone) => zone.name);
  const metrics = new Set<string>(['CPUS', 'PREEMPTIBLE_CPUS']);
  for (const zone of zones) {
    for (const { spec } of project.data.acceleratorTypesIn(zone)) {
      metrics.add(gpuQuotaMetric(spec.type, false));
      metrics.add(gpuQuotaMetric(spec.type, true));
    }
  }
  return {
    kind: 'compute#region',
    id: String(1000 + project.data.regions.indexOf(region)),
    name: region,
    description: region,
    status: 'UP',
    zones: zones.map((zone) => link(`projects/${project.project}/zones/${zone}`)),
    quotas: [...metrics].sort().map((metric) => ({
      metric,
      limit: quotaLimit(project, metric),
      usage: quotaUsage(project, region, metric),
    })),
    selfLink: link(`projects/${project.project}/regions/${region}`),
  };
}

export function zoneResource(project: GcpComputeProject, zone: string) {
  const region = regionOfZone(zone);
  return {
    kind: 'compute#zone',
    id: String(2000 + project.data.zones.findIndex((each) => each.name === zone)),
    name: zone,
    description: zone,
    status: 'UP',
    region: link(`projects/${project.project}/regions/${region}`),
    availableCpuPlatforms: ['Intel Cascade Lake', 'Intel Skylake', 'AMD Milan'],
    selfLink: link(`projects/${project.project}/zones/${zone}`),
  };
}

export function machineTypeResource(project: GcpComputeProject, name: string, zone: string) {
  const spec = project.data.machineTypes.get(name);
  if (!spec) throw notFound(`projects/${project.project}/zones/${zone}/machineTypes/${name}`);
  return {
    kind: 'compute#machineType',
    id: String(3000 + [...project.data.machineTypes.keys()].indexOf(name)),
    name,
    description: `${spec.vcpus} vCPUs, ${Math.round(spec.memoryMb / 1024)} GB RAM`,
    guestCpus: spec.vcpus,
    memoryMb: spec.memoryMb,
    maximumPersistentDisks: 128,
    maximumPersistentDisksSizeGb: '263168',
    zone,
    isSharedCpu: false,
    ...(spec.accelerators
      ? {
          accelerators: [
            { guestAcceleratorType: spec.accelerators.type, guestAcceleratorCount: spec.accelerators.count },
          ],
        }
      : {}),
    selfLink: link(`projects/${project.project}/zones/${zone}/machineTypes/${name}`),
  };
}

export function acceleratorTypesIn(project: GcpComputeProject, zone: string) {
  return project.data.acceleratorTypesIn(zone).map(({ spec, maximumCardsPerInstance }) => ({
    kind: 'compute#acceleratorType',
    id: String(4000 + [...project.data.accelerators.keys()].indexOf(spec.type)),
    name: spec.type,
    description: `NVIDIA ${spec.gpuName}`,
    maximumCardsPerInstance,
    zone: link(`projects/${project.project}/zones/${zone}`),
    selfLink: link(`projects/${project.project}/zones/${zone}/acceleratorTypes/${spec.type}`),
  }));
}

export function imageResource(image: GcpImage) {
  return {
    kind: 'compute#image',
    id: String(5000 + image.name.length),
    name: image.name,
    ...(image.family ? { family: image.family } : {}),
    status: 'READY',
    archiveSizeBytes: '2147483648',
    diskSizeGb: String(image.diskSizeGb ?? 10),
    creationTimestamp: image.creationTimestamp,
    architecture: 'X86_64',
    selfLink: link(`projects/${image.project}/global/images/${image.name}`),
  };
}
