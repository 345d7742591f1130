/**
 * Reading a Compute request: path parameters looked up in the project (404 and 403 worded as
 * Compute words them), the JSON body, resource names, and list and aggregated-list answers.
 */
import type { EmulatorRequest } from '../../emulator/emulator-server.js';
import { GcpApiError, invalidField, notFound } from './gcp-api-error.js';
import type { GcpDisk } from './gcp-compute-disks.js';
import type { GcpInstance, GcpOperation } from './gcp-compute-instances.js';
import type { GcpComputeProject, GcpImage } from './gcp-compute-project.js';
import { link, page, parseListFilter } from './gcp-compute-resources.js';

export function param(request: EmulatorRequest, name: string): string {
  return decodeURIComponent(request.params[name] ?? '');
}

export function checkProject(project: GcpComputeProject, request: EmulatorRequest): void {
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

export function regionOf(project: GcpComputeProject, request: EmulatorRequest): string {
  const region = param(request, 'region');
  if (!project.data.regions.includes(region)) throw notFound(`projects/${project.project}/regions/${region}`);
  return region;
}

export function findRegionOperation(project: GcpComputeProject, request: EmulatorRequest) {
  const region = regionOf(project, request);
  const name = param(request, 'operation');
  const operation = project.resourcePolicies.operation(region, name);
  if (!operation) throw notFound(`projects/${project.project}/regions/${region}/operations/${name}`);
  return operation;
}

export function findDisk(project: GcpComputeProject, request: EmulatorRequest): GcpDisk {
  const zone = zoneOf(project, request);
  const name = param(request, 'name');
  const disk = project.disks.find(zone, name);
  if (!disk) throw notFound(`projects/${project.project}/zones/${zone}/disks/${name}`);
  return disk;
}

export function zoneOf(project: GcpComputeProject, request: EmulatorRequest): string {
  const zone = param(request, 'zone');
  if (!project.data.zone(zone)) throw notFound(`projects/${project.project}/zones/${zone}`);
  return zone;
}

export function list(
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

export function aggregated(
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

/** `projects/P/global/images/N` or `…/images/family/F` (or the full URL), else 404. */
export function findImage(project: GcpComputeProject, reference: string): GcpImage {
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

export function bodyOf(request: EmulatorRequest): Record<string, unknown> {
  if (typeof request.body !== 'object' || request.body === null || Array.isArray(request.body)) {
    throw new GcpApiError(400, 'parseError', 'This API does not support parsing form-encoded input.');
  }
  return request.body as Record<string, unknown>;
}

const RESOURCE_NAME = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function resourceName(body: Record<string, unknown>, kind: string): string {
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

export function findInstance(project: GcpComputeProject, request: EmulatorRequest): GcpInstance {
  const zone = zoneOf(project, request);
  const name = param(request, 'name');
  const instance = project.instances.find(zone, name);
  if (!instance) throw notFound(`projects/${project.project}/zones/${zone}/instances/${name}`);
  return instance;
}

export function findOperation(project: GcpComputeProject, request: EmulatorRequest): GcpOperation {
  const zone = zoneOf(project, request);
  const name = param(request, 'operation');
  const operation = project.instances.operation(zone, name);
  if (!operation) throw notFound(`projects/${project.project}/zones/${zone}/operations/${name}`);
  return operation;
}
