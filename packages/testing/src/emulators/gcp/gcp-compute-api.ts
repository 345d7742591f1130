/**
 * Compute Engine v1 REST under `/compute/v1/projects/{project}/…`: the project, regions (with
 * GPU quotas), zones, machine and accelerator types (per zone and aggregated), images, firewalls,
 * instances and zone operations. Authentication and rate limits are the emulator's (`gcp-emulator.ts`).
 */
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import { json } from '../../emulator/emulator-responses.js';
import type { EmulatorRequest, EmulatorRoute } from '../../emulator/emulator-server.js';
import type { EmulatedHostKind } from '../hosts/emulated-host-image.js';
import { alreadyExists, GcpApiError, invalidField, notFound } from './gcp-api-error.js';
import type { GcpDisk, GcpDisks } from './gcp-compute-disks.js';
import type { GcpInstance, GcpInstances, GcpOperation, GcpOperationError } from './gcp-compute-instances.js';
import {
  gpuQuotaMetric,
  lastSegment,
  link,
  page,
  parseListFilter,
  rfc3339,
} from './gcp-compute-resources.js';
import type { GcpEmulatorData } from './gcp-emulator-data.js';
import { regionOfZone } from './gcp-emulator-data.js';
import type { GcpEmulatorFaults, GcpProvisioningModel, InsertTarget } from './gcp-emulator-faults.js';
import type { GcpReservations } from './gcp-reservations.js';
import type { GcpResourcePolicies } from './gcp-resource-policies.js';

export interface GcpImage {
  /** The project that owns it, e.g. `dstack`, `ubuntu-os-cloud`. */
  readonly project: string;
  readonly name: string;
  readonly family?: string;
  readonly creationTimestamp: string;
  readonly diskSizeGb?: number;
  /**
   * What the hosts booted from it have. Default: Docker with dstack's images pre-pulled for
   * dstack's images (its Packer build pulls them), no Docker for the others.
   */
  readonly hostKind?: EmulatedHostKind;
}

function hostKindOf(image: GcpImage): EmulatedHostKind {
  return image.hostKind ?? (image.project === 'dstack' ? 'dstack' : 'plain');
}

/** dstack's images (`projects/dstack/global/images/dstack[-cuda]-{version}`) and Ubuntu's. */
export const DEFAULT_GCP_IMAGES: readonly GcpImage[] = [
  { project: 'dstack', name: 'dstack-0.19.40', creationTimestamp: '2025-11-20T04:00:00.000-08:00' },
  { project: 'dstack', name: 'dstack-cuda-0.19.40', creationTimestamp: '2025-11-20T04:05:00.000-08:00' },
  {
    project: 'ubuntu-os-cloud',
    name: 'ubuntu-2204-jammy-v20250516',
    family: 'ubuntu-2204-lts',
    creationTimestamp: '2025-05-16T00:00:00.000-07:00',
  },
];

/** The limit of every quota a test does not set: enough not to matter. */
export const DEFAULT_GCP_QUOTA_LIMIT = 64;

export interface GcpComputeProject {
  readonly project: string;
  readonly data: GcpEmulatorData;
  readonly instances: GcpInstances;
  readonly disks: GcpDisks;
  readonly resourcePolicies: GcpResourcePolicies;
  readonly reservations: GcpReservations;
  readonly faults: GcpEmulatorFaults;
  readonly images: readonly GcpImage[];
  /** Limits by metric (e.g. `{NVIDIA_T4_GPUS: 0}`) in every region; others `DEFAULT_GCP_QUOTA_LIMIT` (CPUS 1000). */
  readonly quotas: Readonly<Record<string, number>>;
  readonly clock: () => number;
  readonly firewalls: Map<string, Record<string, unknown>>;
  /** Insert operations by `requestId` (retries of one insert answer the same operation). */
  readonly requestIds: Map<string, GcpOperation>;
  /** Global operations (firewall inserts), DONE from the start. */
  readonly globalOperations: Map<string, Record<string, unknown>>;
}

const BASE = '/compute/v1/projects/:project';

export function computeRoutes(
  project: GcpComputeProject,
  wrap: (
    handler: (request: EmulatorRequest) => EmulatorResponse,
  ) => (request: EmulatorRequest) => EmulatorResponse,
): EmulatorRoute[] {
  const route = (
    name: string,
    method: string,
    path: string,
    handler: (request: EmulatorRequest) => unknown,
    status = 200,
  ): EmulatorRoute => ({
    name: `compute.${name}`,
    method,
    path: `${BASE}${path}`,
    handle: wrap((request) => {
      // Images of other projects (dstack's, Ubuntu's) are public; everything else is this project's.
      if (!name.startsWith('images.')) checkProject(project, request);
      return json(handler(request), status);
    }),
  });
  return [
    route('projects.get', 'GET', '', () => projectResource(project)),
    route('regions.list', 'GET', '/regions', (request) =>
      list(
        project,
        'compute#regionList',
        'regions',
        project.data.regions.map((each) => regionResource(project, each)),
        request,
      ),
    ),
    route('regions.get', 'GET', '/regions/:region', (request) => {
      const region = param(request, 'region');
      if (!project.data.regions.includes(region))
        throw notFound(`projects/${project.project}/regions/${region}`);
      return regionResource(project, region);
    }),
    route('zones.list', 'GET', '/zones', (request) =>
      list(
        project,
        'compute#zoneList',
        'zones',
        project.data.zones.map((each) => zoneResource(project, each.name)),
        request,
      ),
    ),
    route('zones.get', 'GET', '/zones/:zone', (request) => zoneResource(project, zoneOf(project, request))),
    route('machineTypes.list', 'GET', '/zones/:zone/machineTypes', (request) => {
      const zone = zoneOf(project, request);
      const items = project.data
        .machineTypesIn(zone)
        .map((spec) => machineTypeResource(project, spec.name, zone));
      return list(project, 'compute#machineTypeList', `zones/${zone}/machineTypes`, items, request);
    }),
    route('machineTypes.get', 'GET', '/zones/:zone/machineTypes/:name', (request) => {
      const zone = zoneOf(project, request);
      const name = param(request, 'name');
      if (!project.data.machineOffering(name, zone))
        throw notFound(`projects/${project.project}/zones/${zone}/machineTypes/${name}`);
      return machineTypeResource(project, name, zone);
    }),
    route('machineTypes.aggregatedList', 'GET', '/aggregated/machineTypes', (request) =>
      aggregated(project, 'compute#machineTypeAggregatedList', 'machineTypes', request, (zone) =>
        project.data.machineTypesIn(zone).map((spec) => machineTypeResource(project, spec.name, zone)),
      ),
    ),
    route('reservations.aggregatedList', 'GET', '/aggregated/reservations', (request) => {
      const matches = parseListFilter(request.query.filter);
      return aggregated(project, 'compute#reservationsAggregatedList', 'reservations', request, (zone) =>
        project.reservations
          .in(zone)
          .map((each) => project.reservations.resource(each))
          .filter((each) => !matches || matches(each)),
      );
    }),
    route('reservations.list', 'GET', '/zones/:zone/reservations', (request) => {
      const zone = zoneOf(project, request);
      const items = project.reservations.in(zone).map((each) => project.reservations.resource(each));
      return list(project, 'compute#reservationList', `zones/${zone}/reservations`, items, request);
    }),
    route('reservations.get', 'GET', '/zones/:zone/reservations/:name', (request) => {
      const zone = zoneOf(project, request);
      const name = param(request, 'name');
      const found = project.reservations.in(zone).find((each) => each.name === name);
      if (!found) throw notFound(`projects/${project.project}/zones/${zone}/reservations/${name}`);
      return project.reservations.resource(found);
    }),
    route('acceleratorTypes.list', 'GET', '/zones/:zone/acceleratorTypes', (request) => {
      const zone = zoneOf(project, request);
      return list(
        project,
        'compute#acceleratorTypeList',
        `zones/${zone}/acceleratorTypes`,
        acceleratorTypesIn(project, zone),
        request,
      );
    }),
    route('acceleratorTypes.get', 'GET', '/zones/:zone/acceleratorTypes/:name', (request) => {
      const zone = zoneOf(project, request);
      const found = acceleratorTypesIn(project, zone).find((each) => each.name === param(request, 'name'));
      if (!found)
        throw notFound(
          `projects/${project.project}/zones/${zone}/acceleratorTypes/${param(request, 'name')}`,
        );
      return found;
    }),
    route('acceleratorTypes.aggregatedList', 'GET', '/aggregated/acceleratorTypes', (request) =>
      aggregated(project, 'compute#acceleratorTypeAggregatedList', 'acceleratorTypes', request, (zone) =>
        acceleratorTypesIn(project, zone),
      ),
    ),
    route('images.list', 'GET', '/global/images', (request) => {
      const owner = param(request, 'project');
      const items = project.images.filter((each) => each.project === owner).map(imageResource);
      return list(project, 'compute#imageList', 'global/images', items, request, owner);
    }),
    route('images.getFromFamily', 'GET', '/global/images/family/:family', (request) => {
      const image = findImage(
        project,
        `projects/${param(request, 'project')}/global/images/family/${param(request, 'family')}`,
      );
      return imageResource(image);
    }),
    route('images.get', 'GET', '/global/images/:name', (request) =>
      imageResource(
        findImage(project, `projects/${param(request, 'project')}/global/images/${param(request, 'name')}`),
      ),
    ),
    route('firewalls.list', 'GET', '/global/firewalls', (request) =>
      list(project, 'compute#firewallList', 'global/firewalls', [...project.firewalls.values()], request),
    ),
    route('firewalls.get', 'GET', '/global/firewalls/:name', (request) => {
      const name = param(request, 'name');
      const firewall = project.firewalls.get(name);
      if (!firewall) throw notFound(`projects/${project.project}/global/firewalls/${name}`);
      return firewall;
    }),
    route('firewalls.insert', 'POST', '/global/firewalls', (request) => insertFirewall(project, request)),
    route('globalOperations.get', 'GET', '/global/operations/:operation', (request) => {
      const name = param(request, 'operation');
      const operation = project.globalOperations.get(name);
      if (!operation) throw notFound(`projects/${project.project}/global/operations/${name}`);
      return operation;
    }),
    route('instances.list', 'GET', '/zones/:zone/instances', (request) => {
      const zone = zoneOf(project, request);
      const items = project.instances.listIn(zone).map((each) => instanceResource(project, each));
      return list(project, 'compute#instanceList', `zones/${zone}/instances`, items, request);
    }),
    route('instances.get', 'GET', '/zones/:zone/instances/:name', (request) =>
      instanceResource(project, findInstance(project, request)),
    ),
    route('instances.insert', 'POST', '/zones/:zone/instances', (request) =>
      insertInstance(project, request),
    ),
    route('instances.delete', 'DELETE', '/zones/:zone/instances/:name', (request) =>
      operationResource(project, project.instances.delete(findInstance(project, request))),
    ),
    route('instances.attachDisk', 'POST', '/zones/:zone/instances/:name/attachDisk', (request) =>
      operationResource(project, project.disks.attach(findInstance(project, request), bodyOf(request))),
    ),
    route('instances.detachDisk', 'POST', '/zones/:zone/instances/:name/detachDisk', (request) => {
      const deviceName = request.query.deviceName;
      if (!deviceName)
        throw new GcpApiError(400, 'required', `Required parameter 'deviceName' not specified`);
      return operationResource(project, project.disks.detach(findInstance(project, request), deviceName));
    }),
    route('disks.list', 'GET', '/zones/:zone/disks', (request) => {
      const zone = zoneOf(project, request);
      const items = project.disks.listIn(zone).map((each) => project.disks.resource(each));
      return list(project, 'compute#diskList', `zones/${zone}/disks`, items, request);
    }),
    route('disks.get', 'GET', '/zones/:zone/disks/:name', (request) =>
      project.disks.resource(findDisk(project, request)),
    ),
    route('disks.insert', 'POST', '/zones/:zone/disks', (request) => {
      const zone = zoneOf(project, request);
      const body = bodyOf(request);
      return operationResource(project, project.disks.insert(zone, body, resourceName(body, 'disk')));
    }),
    route('disks.delete', 'DELETE', '/zones/:zone/disks/:name', (request) =>
      operationResource(project, project.disks.delete(findDisk(project, request))),
    ),
    route('resourcePolicies.list', 'GET', '/regions/:region/resourcePolicies', (request) => {
      const region = regionOf(project, request);
      const { resourcePolicies } = project;
      const items = resourcePolicies.listIn(region).map((each) => resourcePolicies.resource(each));
      return list(
        project,
        'compute#resourcePolicyList',
        `regions/${region}/resourcePolicies`,
        items,
        request,
      );
    }),
    route('resourcePolicies.get', 'GET', '/regions/:region/resourcePolicies/:name', (request) => {
      const region = regionOf(project, request);
      const name = param(request, 'name');
      const policy = project.resourcePolicies.find(region, name);
      if (!policy) throw notFound(`projects/${project.project}/regions/${region}/resourcePolicies/${name}`);
      return project.resourcePolicies.resource(policy);
    }),
    route('resourcePolicies.insert', 'POST', '/regions/:region/resourcePolicies', (request) => {
      const region = regionOf(project, request);
      const body = bodyOf(request);
      return project.resourcePolicies.insert(region, body, resourceName(body, 'resource policy'));
    }),
    route('resourcePolicies.delete', 'DELETE', '/regions/:region/resourcePolicies/:name', (request) =>
      project.resourcePolicies.delete(regionOf(project, request), param(request, 'name')),
    ),
    route('regionOperations.get', 'GET', '/regions/:region/operations/:operation', (request) =>
      findRegionOperation(project, request),
    ),
    route('regionOperations.wait', 'POST', '/regions/:region/operations/:operation/wait', (request) =>
      findRegionOperation(project, request),
    ),
    route('zoneOperations.list', 'GET', '/zones/:zone/operations', (request) => {
      const zone = zoneOf(project, request);
      const items = project.instances.operationsIn(zone).map((each) => operationResource(project, each));
      return list(project, 'compute#operationList', `zones/${zone}/operations`, items, request);
    }),
    route('zoneOperations.get', 'GET', '/zones/:zone/operations/:operation', (request) =>
      operationResource(project, findOperation(project, request)),
    ),
    // `wait` answers at once with the operation as it is (the emulator's clock may be a test's).
    route('zoneOperations.wait', 'POST', '/zones/:zone/operations/:operation/wait', (request) =>
      operationResource(project, findOperation(project, request)),
    ),
  ];
}

function param(request: EmulatorRequest, name: string): string {
  return decodeURIComponent(request.params[name] ?? '');
}

function checkProject(project: GcpComputeProject, request: EmulatorRequest): void {
  const asked = param(request, 'project');
  if (asked !== project.project) {
    // What Compute answers for a project the caller cannot see.
    throw new GcpApiError(
      403,
      'forbidden',
      `Required 'compute.projects.get' permission for 'projects/${asked}'`,
    );
  }
}

function regionOf(project: GcpComputeProject, request: EmulatorRequest): string {
  const region = param(request, 'region');
  if (!project.data.regions.includes(region)) throw notFound(`projects/${project.project}/regions/${region}`);
  return region;
}

function findRegionOperation(project: GcpComputeProject, request: EmulatorRequest) {
  const region = regionOf(project, request);
  const name = param(request, 'operation');
  const operation = project.resourcePolicies.operation(region, name);
  if (!operation) throw notFound(`projects/${project.project}/regions/${region}/operations/${name}`);
  return operation;
}

function findDisk(project: GcpComputeProject, request: EmulatorRequest): GcpDisk {
  const zone = zoneOf(project, request);
  const name = param(request, 'name');
  const disk = project.disks.find(zone, name);
  if (!disk) throw notFound(`projects/${project.project}/zones/${zone}/disks/${name}`);
  return disk;
}

function zoneOf(project: GcpComputeProject, request: EmulatorRequest): string {
  const zone = param(request, 'zone');
  if (!project.data.zone(zone)) throw notFound(`projects/${project.project}/zones/${zone}`);
  return zone;
}

function list(
  project: GcpComputeProject,
  kind: string,
  path: string,
  items: readonly unknown[],
  request: EmulatorRequest,
  owner = project.project,
) {
  const matches = parseListFilter(request.query.filter);
  const { items: slice, nextPageToken } = page(matches ? items.filter(matches) : items, request.query);
  return {
    kind,
    id: `projects/${owner}/${path}`,
    items: slice,
    selfLink: link(`projects/${owner}/${path}`),
    ...(nextPageToken ? { nextPageToken } : {}),
  };
}

function aggregated(
  project: GcpComputeProject,
  kind: string,
  key: string,
  request: EmulatorRequest,
  itemsOf: (zone: string) => unknown[],
) {
  const entries = project.data.zones.map(
    (zone) => [`zones/${zone.name}`, { [key]: itemsOf(zone.name) }] as const,
  );
  const { items: slice, nextPageToken } = page(entries, request.query);
  return {
    kind,
    id: `projects/${project.project}/aggregated/${key}`,
    items: Object.fromEntries(slice),
    selfLink: link(`projects/${project.project}/aggregated/${key}`),
    ...(nextPageToken ? { nextPageToken } : {}),
  };
}

function projectResource(project: GcpComputeProject) {
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
function regionResource(project: GcpComputeProject, region: string) {
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

function quotaLimit(project: GcpComputeProject, metric: string): number {
  return project.quotas[metric] ?? (metric.endsWith('CPUS') ? 1000 : DEFAULT_GCP_QUOTA_LIMIT);
}

/** What the live instances of `region` use of `metric`. */
function quotaUsage(project: GcpComputeProject, region: string, metric: string): number {
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
function quotaNeeds(
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

function zoneResource(project: GcpComputeProject, zone: string) {
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

function machineTypeResource(project: GcpComputeProject, name: string, zone: string) {
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

function acceleratorTypesIn(project: GcpComputeProject, zone: string) {
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

function imageResource(image: GcpImage) {
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

/** `projects/P/global/images/N` or `…/images/family/F` (or the full URL), else 404. */
function findImage(project: GcpComputeProject, reference: string): GcpImage {
  const path = reference.replace(/^https:\/\/(www|compute)\.googleapis\.com\/compute\/v1\//, '');
  const family = /^projects\/([^/]+)\/global\/images\/family\/([^/]+)$/.exec(path);
  if (family) {
    const found = project.images
      .filter((each) => each.project === family[1] && each.family === family[2])
      .at(-1);
    if (found) return found;
  }
  const named = /^projects\/([^/]+)\/global\/images\/([^/]+)$/.exec(path);
  const found = named && project.images.find((each) => each.project === named[1] && each.name === named[2]);
  if (found) return found;
  throw notFound(path);
}

function bodyOf(request: EmulatorRequest): Record<string, unknown> {
  if (typeof request.body !== 'object' || request.body === null || Array.isArray(request.body)) {
    throw new GcpApiError(400, 'parseError', 'This API does not support parsing form-encoded input.');
  }
  return request.body as Record<string, unknown>;
}

const RESOURCE_NAME = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

function resourceName(body: Record<string, unknown>, kind: string): string {
  const name = body.name;
  if (typeof name !== 'string' || name === '') {
    throw new GcpApiError(400, 'required', `Required field 'resource.name' not specified`);
  }
  if (!RESOURCE_NAME.test(name)) {
    throw invalidField(
      'resource.name',
      `'${name}'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)' (${kind})`,
    );
  }
  return name;
}

function insertFirewall(project: GcpComputeProject, request: EmulatorRequest) {
  const body = bodyOf(request);
  const name = resourceName(body, 'firewall');
  const resource = `projects/${project.project}/global/firewalls/${name}`;
  if (project.firewalls.has(name)) throw alreadyExists(resource);
  const now = project.clock();
  project.firewalls.set(name, {
    kind: 'compute#firewall',
    id: String(6000 + project.firewalls.size),
    creationTimestamp: rfc3339(now),
    direction: 'INGRESS',
    priority: 1000,
    network: link(`projects/${project.project}/global/networks/default`),
    ...body,
    name,
    selfLink: link(resource),
  });
  // A global operation, DONE at once: firewalls are quick, and dstack does not wait on it.
  const operationName = `operation-${now}-${project.globalOperations.size.toString(16).padStart(13, '0')}-firewall`;
  const operation = {
    kind: 'compute#operation',
    id: String(8_000_000_000 + project.globalOperations.size),
    name: operationName,
    operationType: 'insert',
    targetLink: link(resource),
    targetId: String(6000 + project.firewalls.size - 1),
    status: 'DONE',
    progress: 100,
    insertTime: rfc3339(now),
    startTime: rfc3339(now),
    endTime: rfc3339(now),
    selfLink: link(`projects/${project.project}/global/operations/${operationName}`),
  };
  project.globalOperations.set(operationName, operation);
  return operation;
}

interface GuestAccelerator {
  readonly type: string;
  readonly count: number;
}

function guestAccelerators(body: Readonly<Record<string, unknown>>): GuestAccelerator[] {
  const list = body.guestAccelerators;
  if (!Array.isArray(list)) return [];
  return list.map((each: { acceleratorType?: unknown; acceleratorCount?: unknown }) => ({
    type: lastSegment(String(each.acceleratorType ?? '')),
    count: Number(each.acceleratorCount ?? 1),
  }));
}

/** The script the instance boots with: `startup-script`, else `user-data` (cloud-init), else none. */
function userDataOf(body: Record<string, unknown>): string {
  const items = (body.metadata as { items?: { key?: unknown; value?: unknown }[] } | undefined)?.items ?? [];
  const value = (key: string) => items.find((each) => each.key === key)?.value;
  const script = value('startup-script') ?? value('user-data');
  return typeof script === 'string' ? script : '';
}

function insertInstance(project: GcpComputeProject, request: EmulatorRequest) {
  const zone = zoneOf(project, request);
  const requestId = request.query.requestId;
  const repeated = requestId ? project.requestIds.get(requestId) : undefined;
  if (repeated) return operationResource(project, repeated);
  const body = bodyOf(request);
  const name = resourceName(body, 'instance');
  const instancePath = `projects/${project.project}/zones/${zone}/instances/${name}`;
  if (project.instances.find(zone, name)) throw alreadyExists(instancePath);

  const machineType = lastSegment(String(body.machineType ?? ''));
  if (machineType === '')
    throw new GcpApiError(400, 'required', `Required field 'resource.machineType' not specified`);
  if (!project.data.machineOffering(machineType, zone)) {
    throw new GcpApiError(
      404,
      'notFound',
      `Invalid value for field 'resource.machineType': 'zones/${zone}/machineTypes/${machineType}'. Machine type with name '${machineType}' does not exist in zone '${zone}'.`,
    );
  }
  const zoneAccelerators = new Map(
    project.data.acceleratorTypesIn(zone).map((each) => [each.spec.type, each.maximumCardsPerInstance]),
  );
  for (const [index, guest] of guestAccelerators(body).entries()) {
    const maximum = zoneAccelerators.get(guest.type);
    if (maximum === undefined) {
      throw new GcpApiError(
        404,
        'notFound',
        `Invalid value for field 'resource.guestAccelerators[${index}].acceleratorType': 'projects/${project.project}/zones/${zone}/acceleratorTypes/${guest.type}'. Accelerator type '${guest.type}' does not exist in zone '${zone}'.`,
      );
    }
    if (!Number.isInteger(guest.count) || guest.count < 1 || guest.count > maximum) {
      throw invalidField(
        `resource.guestAccelerators[${index}].acceleratorCount`,
        `'${guest.count}'. Accelerator count must be between 1 and ${maximum}.`,
      );
    }
  }
  const disks = Array.isArray(body.disks)
    ? (body.disks as { boot?: boolean; initializeParams?: { sourceImage?: unknown } }[])
    : [];
  const boot = disks.find((each) => each.boot) ?? disks[0];
  const sourceImage = boot?.initializeParams?.sourceImage;
  if (typeof sourceImage !== 'string') {
    throw new GcpApiError(
      400,
      'required',
      `Required field 'resource.disks[0].initializeParams.sourceImage' not specified`,
    );
  }
  const image = findImage(project, sourceImage);

  const scheduling = (body.scheduling ?? {}) as { provisioningModel?: unknown; preemptible?: unknown };
  const provisioningModel: GcpProvisioningModel =
    scheduling.provisioningModel === 'SPOT' || scheduling.preemptible === true ? 'SPOT' : 'STANDARD';
  const [resourcePolicy] = project.resourcePolicies.checkInsert(zone, body);
  const reservation = project.reservations.checkInsert(zone, body, provisioningModel === 'SPOT');
  const target = { machineType, zone, provisioningModel, resourcePolicy };
  const interfaces = Array.isArray(body.networkInterfaces)
    ? (body.networkInterfaces as { accessConfigs?: unknown[] }[])
    : [];
  // Reserved capacity is there whatever the zone has left, and its quota was counted when it was reserved.
  const failure = reservation ? undefined : insertFailure(project, target, body);
  const slowIp = project.faults.has('SLOW_NAT_IP', target);
  const preemption = provisioningModel === 'SPOT' ? project.faults.fire('PREEMPTION', target) : undefined;
  const { operation } = project.instances.insert({
    name,
    zone,
    machineType,
    provisioningModel,
    body,
    userData: userDataOf(body),
    hostKind: hostKindOf(image),
    externalIpWanted: (interfaces[0]?.accessConfigs?.length ?? 0) > 0,
    failure,
    natIpDelayMs: slowIp ? (slowIp.delayMs ?? 5000) : 0,
    preemptAfterRunningMs: preemption ? (preemption.afterRunningMs ?? 5000) : undefined,
  });
  if (requestId) project.requestIds.set(requestId, operation);
  return operationResource(project, operation);
}

/** Whether (and how late) the insert fails: a capacity or quota fault, or a quota the region lacks. */
function insertFailure(
  project: GcpComputeProject,
  target: InsertTarget,
  body: Record<string, unknown>,
): { afterMs: number; error: GcpOperationError } | undefined {
  const region = regionOfZone(target.zone);
  const exhausted = project.faults.fire('ZONE_RESOURCE_POOL_EXHAUSTED', target);
  if (exhausted) {
    return {
      afterMs: exhausted.delayMs ?? 0,
      error: {
        code: 'ZONE_RESOURCE_POOL_EXHAUSTED',
        message: `The zone 'projects/${project.project}/zones/${target.zone}' does not have enough resources available to fulfill the request.  Try a different zone, or try again later.`,
        httpStatus: 503,
        httpMessage: 'SERVICE UNAVAILABLE',
        errorDetails: [
          {
            errorInfo: {
              reason: 'resource_availability',
              domain: 'compute.googleapis.com',
              metadatas: { zone: target.zone, vmType: target.machineType },
            },
          },
        ],
      },
    };
  }
  const needs = quotaNeeds(project, target.machineType, body, target.provisioningModel);
  const quotaFault = project.faults.fire('QUOTA_EXCEEDED', target);
  // The fault names the first GPU metric (CPUS for a CPU-only type) with a limit of 0.
  const faulted = quotaFault ? (needs.find(([metric]) => metric.endsWith('_GPUS')) ?? needs[0]) : undefined;
  const over = faulted
    ? { metric: faulted[0], limit: 0 }
    : needs
        .map(([metric, amount]) => ({ metric, limit: quotaLimit(project, metric), amount }))
        .find(
          ({ metric, limit, amount }) => amount > 0 && quotaUsage(project, region, metric) + amount > limit,
        );
  if (!over) return undefined;
  return {
    afterMs: quotaFault?.delayMs ?? 0,
    error: {
      code: 'QUOTA_EXCEEDED',
      message: `Quota '${over.metric}' exceeded.  Limit: ${over.limit.toFixed(1)} in region ${region}.`,
      httpStatus: 403,
      httpMessage: 'FORBIDDEN',
      errorDetails: [
        {
          quotaInfo: {
            metricName: `compute.googleapis.com/${over.metric.toLowerCase()}`,
            limitName: `${over.metric}-per-project-region`,
            dimensions: { region },
            limit: over.limit,
          },
        },
      ],
    },
  };
}

function findInstance(project: GcpComputeProject, request: EmulatorRequest): GcpInstance {
  const zone = zoneOf(project, request);
  const name = param(request, 'name');
  const instance = project.instances.find(zone, name);
  if (!instance) throw notFound(`projects/${project.project}/zones/${zone}/instances/${name}`);
  return instance;
}

function findOperation(project: GcpComputeProject, request: EmulatorRequest): GcpOperation {
  const zone = zoneOf(project, request);
  const name = param(request, 'operation');
  const operation = project.instances.operation(zone, name);
  if (!operation) throw notFound(`projects/${project.project}/zones/${zone}/operations/${name}`);
  return operation;
}

function instanceResource(project: GcpComputeProject, instance: GcpInstance) {
  const { instances } = project;
  const status = instances.status(instance) ?? 'TERMINATED';
  const zonePath = `projects/${project.project}/zones/${instance.zone}`;
  const body = instance.body as Record<string, unknown> & {
    networkInterfaces?: { accessConfigs?: Record<string, unknown>[] }[];
    metadata?: { items?: unknown[] };
    disks?: Record<string, unknown>[];
  };
  const natIP = instances.natIp(instance);
  const networkIP = instances.internalIp(instance);
  const networkInterfaces = (body.networkInterfaces ?? [{}]).map((each, index) => ({
    kind: 'compute#networkInterface',
    name: `nic${index}`,
    network: link(`projects/${project.project}/global/networks/default`),
    subnetwork: link(
      `projects/${project.project}/regions/${regionOfZone(instance.zone)}/subnetworks/default`,
    ),
    ...each,
    ...(index === 0 && networkIP ? { networkIP } : {}),
    ...(each.accessConfigs
      ? {
          accessConfigs: each.accessConfigs.map((config, configIndex) => ({
            kind: 'compute#accessConfig',
            type: 'ONE_TO_ONE_NAT',
            name: 'External NAT',
            networkTier: 'PREMIUM',
            ...config,
            ...(index === 0 && configIndex === 0 && natIP ? { natIP } : {}),
          })),
        }
      : {}),
  }));
  const scheduling = {
    onHostMaintenance: 'TERMINATE',
    automaticRestart: false,
    preemptible: instance.provisioningModel === 'SPOT',
    provisioningModel: instance.provisioningModel,
    ...(body.scheduling as Record<string, unknown> | undefined),
  };
  return {
    kind: 'compute#instance',
    id: instance.id,
    creationTimestamp: rfc3339(instance.createdAt),
    name: instance.name,
    ...(body.description !== undefined ? { description: body.description } : {}),
    tags: { items: [], fingerprint: 'emulator', ...(body.tags as Record<string, unknown> | undefined) },
    machineType: link(`${zonePath}/machineTypes/${instance.machineType}`),
    status,
    zone: link(zonePath),
    networkInterfaces,
    disks: [
      ...(body.disks ?? []).map((disk, index) => ({
        kind: 'compute#attachedDisk',
        type: 'PERSISTENT',
        mode: 'READ_WRITE',
        deviceName: `persistent-disk-${index}`,
        index,
        boot: index === 0,
        autoDelete: true,
        source: link(`${zonePath}/disks/${instance.name}${index === 0 ? '' : `-${index}`}`),
        diskSizeGb: String((disk.initializeParams as { diskSizeGb?: unknown } | undefined)?.diskSizeGb ?? 10),
        ...disk,
      })),
      ...project.disks.attachedDiskResources(instance),
    ],
    ...(Array.isArray(body.resourcePolicies)
      ? {
          resourcePolicies: (body.resourcePolicies as unknown[]).map((each) =>
            link(
              `projects/${project.project}/regions/${regionOfZone(instance.zone)}/resourcePolicies/${lastSegment(String(each))}`,
            ),
          ),
        }
      : {}),
    metadata: { kind: 'compute#metadata', fingerprint: 'emulator', items: body.metadata?.items ?? [] },
    ...(body.serviceAccounts ? { serviceAccounts: body.serviceAccounts } : {}),
    ...(body.guestAccelerators
      ? {
          guestAccelerators: guestAccelerators(body).map((each) => ({
            acceleratorType: link(`${zonePath}/acceleratorTypes/${each.type}`),
            acceleratorCount: each.count,
          })),
        }
      : {}),
    scheduling,
    labels: (body.labels as Record<string, unknown> | undefined) ?? {},
    labelFingerprint: 'emulator',
    cpuPlatform: 'Intel Cascade Lake',
    selfLink: link(`${zonePath}/instances/${instance.name}`),
  };
}

function operationResource(project: GcpComputeProject, operation: GcpOperation) {
  const status = project.instances.operationStatus(operation);
  const zonePath = `projects/${project.project}/zones/${operation.zone}`;
  const done = status === 'DONE';
  const error = done ? operation.error : undefined;
  return {
    kind: 'compute#operation',
    id: operation.id,
    name: operation.name,
    zone: link(zonePath),
    operationType: operation.operationType,
    targetLink: link(`${zonePath}/${operation.targetKind ?? 'instances'}/${operation.targetName}`),
    targetId: operation.targetId,
    status,
    ...(operation.statusMessage ? { statusMessage: operation.statusMessage } : {}),
    user: 'dstack@emulator',
    progress: done ? 100 : 0,
    insertTime: rfc3339(operation.insertTime),
    ...(status !== 'PENDING' ? { startTime: rfc3339(operation.runningAt) } : {}),
    ...(done ? { endTime: rfc3339(operation.doneAt()) } : {}),
    ...(error
      ? {
          error: {
            errors: [{ code: error.code, message: error.message, errorDetails: error.errorDetails }],
          },
          httpErrorStatusCode: error.httpStatus,
          httpErrorMessage: error.httpMessage,
        }
      : {}),
    selfLink: link(`${zonePath}/operations/${operation.name}`),
  };
}
