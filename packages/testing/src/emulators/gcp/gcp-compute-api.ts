/**
 * Compute Engine v1 REST under `/compute/v1/projects/{project}/…`: the project, regions (with
 * GPU quotas), zones, machine and accelerator types (per zone and aggregated), images, firewalls,
 * instances and zone operations: the routes. The project's state is in `gcp-compute-project.ts`, reading
 * requests in `gcp-compute-requests.ts`, the resources' shapes in `gcp-compute-catalog.ts` and
 * `gcp-compute-instance-resources.ts`, inserts in `gcp-compute-inserts.ts`, quotas in
 * `gcp-compute-quotas.ts`. Authentication and rate limits are the emulator's (`gcp-emulator.ts`).
 */
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import { json } from '../../emulator/emulator-responses.js';
import type { EmulatorRequest, EmulatorRoute } from '../../emulator/emulator-server.js';
import { GcpApiError, notFound } from './gcp-api-error.js';
import {
  acceleratorTypesIn,
  imageResource,
  machineTypeResource,
  projectResource,
  regionResource,
  zoneResource,
} from './gcp-compute-catalog.js';
import { insertFirewall, insertInstance } from './gcp-compute-inserts.js';
import { instanceResource, operationResource } from './gcp-compute-instance-resources.js';
import type { GcpComputeProject } from './gcp-compute-project.js';
import {
  aggregated,
  bodyOf,
  checkProject,
  findDisk,
  findImage,
  findInstance,
  findOperation,
  findRegionOperation,
  list,
  param,
  regionOf,
  resourceName,
  zoneOf,
} from './gcp-compute-requests.js';
import { parseListFilter } from './gcp-compute-resources.js';

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
