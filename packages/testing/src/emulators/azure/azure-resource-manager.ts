/**
 * Resource Manager's REST API under `/subscriptions/{subscriptionId}`, as the calls dstack's
 * Azure backend makes reach it: resource groups, virtual networks with their subnets and peerings,
 * NAT gateways, network security groups, user-assigned managed identities, NICs, public IPs, disks,
 * virtual machines (`azure-virtual-machines.ts`), the
 * Compute resource SKUs, community gallery images, and the `operations/{id}` status documents of
 * long-running operations. Paths and names are matched without case, as Azure does; an id in a
 * body must name an existing resource.
 */
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import { empty, json } from '../../emulator/emulator-responses.js';
import type { EmulatorRequest } from '../../emulator/emulator-server.js';
import { AzureArmError } from './azure-arm-error.js';
import { resourceGroupId, resourceId } from './azure-resource-ids.js';
import type { AzureResource } from './azure-resources.js';
import {
  type AzureVmContext,
  DISK_TYPE,
  deleteVirtualMachine,
  getVirtualMachine,
  IDENTITY_TYPE,
  NIC_TYPE,
  PUBLIC_IP_TYPE,
  putUserAssignedIdentity,
  putVirtualMachine,
  SUBNET_TYPE,
} from './azure-virtual-machines.js';

/** The public gallery dstack's VM images are published in (dstack's Gen2 community gallery). */
export const DSTACK_COMMUNITY_GALLERY = 'dstack-ebac134d-04b9-4c2b-8b6c-ad3e73904aa7';

const VNET_TYPE = 'Microsoft.Network/virtualNetworks';
const NSG_TYPE = 'Microsoft.Network/networkSecurityGroups';
const NAT_GATEWAY_TYPE = 'Microsoft.Network/natGateways';

/** The ARM type of `providers/{namespace}/{type}` in a path, spelt as Azure spells it. */
const TYPES: Readonly<Record<string, string>> = {
  'microsoft.network/virtualnetworks': VNET_TYPE,
  'microsoft.network/networksecuritygroups': NSG_TYPE,
  'microsoft.network/networkinterfaces': NIC_TYPE,
  'microsoft.network/publicipaddresses': PUBLIC_IP_TYPE,
  'microsoft.compute/disks': DISK_TYPE,
  'microsoft.network/natgateways': NAT_GATEWAY_TYPE,
  'microsoft.compute/virtualmachines': 'Microsoft.Compute/virtualMachines',
  'microsoft.managedidentity/userassignedidentities': IDENTITY_TYPE,
};

type Json = Record<string, unknown>;

function object(value: unknown): Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
}

function document(resource: AzureResource): Json {
  return {
    id: resource.id,
    name: resource.name,
    type: resource.type,
    location: resource.location,
    tags: resource.tags,
    properties: resource.properties,
  };
}

function notFound(type: string, name: string, resourceGroup: string): AzureArmError {
  return new AzureArmError(
    404,
    'ResourceNotFound',
    `The Resource '${type}/${name}' under resource group '${resourceGroup}' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix`,
  );
}

export class AzureResourceManager {
  constructor(readonly context: AzureVmContext) {}

  get #resources() {
    return this.context.resources;
  }

  handle(request: EmulatorRequest): EmulatorResponse {
    const segments = request.path.split('/').filter(Boolean).map(decodeURIComponent);
    const lower = segments.map((segment) => segment.toLowerCase());
    const subscriptionId = segments[1] ?? '';
    if (subscriptionId !== this.#resources.subscriptionId) {
      throw new AzureArmError(
        404,
        'SubscriptionNotFound',
        `The subscription '${subscriptionId}' could not be found.`,
      );
    }
    const apiVersion = request.query['api-version'];
    if (!apiVersion) {
      throw new AzureArmError(
        400,
        'MissingApiVersionParameter',
        'The api-version query parameter (?api-version=) is required for all requests.',
      );
    }
    const call = { baseUrl: request.baseUrl, apiVersion };
    if (segments.length === 2 && request.method === 'GET') {
      return json({
        id: `/subscriptions/${subscriptionId}`,
        subscriptionId,
        displayName: 'dstack emulator',
        state: 'Enabled',
      });
    }
    if (lower[2] === 'providers') return this.#subscriptionProvider(request, segments, lower);
    if (lower[2] !== 'resourcegroups') throw this.#noRoute(request);
    const groupName = segments[3];
    if (groupName === undefined) {
      if (request.method !== 'GET') throw this.#noRoute(request);
      return json({ value: this.#resources.groups().map((group) => this.#groupDocument(group.name)) });
    }
    if (segments.length === 4) return this.#resourceGroup(request, groupName);
    const group = this.#resources.group(groupName);
    if (!group) {
      throw new AzureArmError(
        404,
        'ResourceGroupNotFound',
        `Resource group '${groupName}' could not be found.`,
      );
    }
    if (lower[4] !== 'providers' || segments.length < 7) throw this.#noRoute(request);
    const type = TYPES[`${lower[5]}/${lower[6]}`];
    if (!type) throw this.#noRoute(request);
    const name = segments[7];
    if (name === undefined) {
      if (request.method !== 'GET') throw this.#noRoute(request);
      return json({ value: this.#resources.list(type, group.name).map(document) });
    }
    if (type === 'Microsoft.Compute/virtualMachines' && segments.length === 8) {
      if (request.method === 'PUT')
        return putVirtualMachine(this.context, call, group.name, name, request.body);
      if (request.method === 'GET')
        return getVirtualMachine(this.context, group.name, name, request.query.$expand);
      if (request.method === 'DELETE') return deleteVirtualMachine(this.context, call, group.name, name);
      throw this.#noRoute(request);
    }
    if (type === VNET_TYPE && lower[8] === 'subnets')
      return this.#subnets(request, group.name, name, segments[9]);
    if (type === VNET_TYPE && lower[8] === 'virtualnetworkpeerings' && segments.length === 9)
      return this.#peerings(request, group.name, name);
    if (segments.length !== 8) throw this.#noRoute(request);
    const id = resourceId(subscriptionId, group.name, type, name);
    if (request.method === 'GET') {
      const resource = this.#resources.get(id);
      if (!resource) throw notFound(type, name, group.name);
      return json(document(resource));
    }
    if (request.method === 'PUT' && (type === VNET_TYPE || type === NSG_TYPE || type === NAT_GATEWAY_TYPE)) {
      return this.#putNetworkResource(call, group.name, type, name, object(request.body));
    }
    if (request.method === 'PUT' && type === IDENTITY_TYPE) {
      const { resource, created } = putUserAssignedIdentity(
        this.context,
        group.name,
        name,
        object(request.body),
      );
      return json(document(resource), created ? 201 : 200);
    }
    throw this.#noRoute(request);
  }

  #noRoute(request: EmulatorRequest): AzureArmError {
    return new AzureArmError(
      404,
      'InvalidResourceType',
      `The emulated Resource Manager has no ${request.method} ${request.path}`,
    );
  }

  #groupDocument(name: string): Json {
    const group = this.#resources.group(name);
    return {
      id: resourceGroupId(this.#resources.subscriptionId, group?.name ?? name),
      name: group?.name ?? name,
      type: 'Microsoft.Resources/resourceGroups',
      location: group?.location,
      tags: group?.tags ?? {},
      properties: { provisioningState: 'Succeeded' },
    };
  }

  #resourceGroup(request: EmulatorRequest, name: string): EmulatorResponse {
    const exists = this.#resources.group(name) !== undefined;
    switch (request.method) {
      case 'HEAD':
        return empty(exists ? 204 : 404);
      case 'GET':
        if (!exists)
          throw new AzureArmError(
            404,
            'ResourceGroupNotFound',
            `Resource group '${name}' could not be found.`,
          );
        return json(this.#groupDocument(name));
      case 'PUT': {
        const body = object(request.body);
        const location = typeof body.location === 'string' ? body.location.toLowerCase() : '';
        if (!location)
          throw new AzureArmError(
            400,
            'LocationRequired',
            'The location property is required for this definition.',
          );
        const { created } = this.#resources.putGroup(
          name,
          location,
          object(body.tags) as Record<string, string>,
        );
        return json(this.#groupDocument(name), created ? 201 : 200);
      }
      case 'DELETE':
        if (!exists) return empty(204);
        this.#resources.deleteGroup(name);
        return empty(200);
      default:
        throw this.#noRoute(request);
    }
  }

  /** A virtual network (with its subnets) or a network security group: created at once, reported through an operation. */
  #putNetworkResource(
    call: { baseUrl: string; apiVersion: string },
    group: string,
    type: string,
    name: string,
    body: Json,
  ): EmulatorResponse {
    const location = this.context.data.requireLocation(body.location, type);
    const id = resourceId(this.#resources.subscriptionId, group, type, name);
    const existed = this.#resources.get(id) !== undefined;
    const properties: Json = { ...object(body.properties), provisioningState: 'Succeeded' };
    if (type === VNET_TYPE) {
      const subnets = Array.isArray(properties.subnets) ? properties.subnets.map(object) : [];
      for (const subnet of subnets) {
        const natGateway = object(object(subnet.properties).natGateway).id;
        if (typeof natGateway === 'string' && !this.#resources.get(natGateway)) {
          throw new AzureArmError(
            400,
            'InvalidResourceReference',
            `Resource ${natGateway} referenced by resource ${id}/subnets/${String(subnet.name)} was not found. Please make sure that the referenced resource exists, and that both resources are in the same region.`,
          );
        }
      }
      properties.subnets = subnets.map((subnet) => {
        const resource = this.#resources.put({
          id: `${id}/subnets/${String(subnet.name)}`,
          name: String(subnet.name),
          type: SUBNET_TYPE,
          location,
          resourceGroup: group,
          tags: {},
          properties: { ...object(subnet.properties), provisioningState: 'Succeeded' },
        });
        return { id: resource.id, name: resource.name, properties: resource.properties };
      });
    }
    const resource = this.#resources.put({
      id,
      name,
      type,
      location,
      resourceGroup: group,
      tags: object(body.tags) as Record<string, string>,
      properties,
    });
    const operation = this.#resources.startOperation('Microsoft.Network', location);
    this.#resources.finishOperation(operation);
    return json(document(resource), existed ? 200 : 201, {
      'azure-asyncoperation': this.#resources.operationUrl(call.baseUrl, operation, call.apiVersion),
    });
  }

  #subnets(
    request: EmulatorRequest,
    group: string,
    network: string,
    subnet: string | undefined,
  ): EmulatorResponse {
    if (request.method !== 'GET') throw this.#noRoute(request);
    const vnet = this.#resources.get(resourceId(this.#resources.subscriptionId, group, VNET_TYPE, network));
    if (!vnet) throw notFound(VNET_TYPE, network, group);
    const subnets = this.#resources
      .list(SUBNET_TYPE, group)
      .filter((each) => each.id.toLowerCase().startsWith(`${vnet.id.toLowerCase()}/subnets/`));
    const toDocument = (each: AzureResource) => ({
      id: each.id,
      name: each.name,
      type: each.type,
      properties: each.properties,
    });
    if (subnet === undefined) return json({ value: subnets.map(toDocument) });
    const found = subnets.find((each) => each.name.toLowerCase() === subnet.toLowerCase());
    if (!found) throw notFound(`${VNET_TYPE}/${network}/subnets`, subnet, group);
    return json(toDocument(found));
  }

  /** A virtual network's peerings (`properties.virtualNetworkPeerings` of its PUT). */
  #peerings(request: EmulatorRequest, group: string, network: string): EmulatorResponse {
    if (request.method !== 'GET') throw this.#noRoute(request);
    const vnet = this.#resources.get(resourceId(this.#resources.subscriptionId, group, VNET_TYPE, network));
    if (!vnet) throw notFound(VNET_TYPE, network, group);
    const peerings = Array.isArray(vnet.properties.virtualNetworkPeerings)
      ? vnet.properties.virtualNetworkPeerings.map(object)
      : [];
    return json({
      value: peerings.map((peering) => ({
        id: `${vnet.id}/virtualNetworkPeerings/${String(peering.name)}`,
        name: peering.name,
        type: `${VNET_TYPE}/virtualNetworkPeerings`,
        properties: {
          ...object(peering.properties),
          peeringState: 'Connected',
          provisioningState: 'Succeeded',
        },
      })),
    });
  }

  /** `/subscriptions/{s}/providers/…`: SKUs, community gallery images, operation statuses. */
  #subscriptionProvider(request: EmulatorRequest, segments: string[], lower: string[]): EmulatorResponse {
    if (request.method !== 'GET') throw this.#noRoute(request);
    const path = lower.slice(3).join('/');
    if (path === 'microsoft.compute/skus') return json({ value: this.#skus(request.query.$filter) });
    if (lower[4] === 'locations' && lower[6] === 'operations' && segments[7]) {
      const operation = this.#resources.operation(segments[7]);
      if (!operation)
        throw new AzureArmError(
          404,
          'OperationNotFound',
          `The operation '${segments[7]}' could not be found.`,
        );
      if (request.query.monitor === 'true') {
        return operation.status === 'InProgress'
          ? empty(202, {
              location: `${request.baseUrl}${request.path}?${new URLSearchParams(request.query)}`,
              'retry-after': '1',
            })
          : empty(204);
      }
      // While it runs, Azure says when to look again.
      const retryAfter: Record<string, string> =
        operation.status === 'InProgress' ? { 'retry-after': '1' } : {};
      return json(
        {
          name: operation.id,
          status: operation.status,
          startTime: operation.startTime,
          ...(operation.endTime ? { endTime: operation.endTime } : {}),
          ...(operation.error ? { error: operation.error } : {}),
        },
        200,
        retryAfter,
      );
    }
    if (
      lower[4] === 'locations' &&
      lower[6] === 'communitygalleries' &&
      lower[8] === 'images' &&
      segments[9]
    ) {
      const location = lower[5] ?? '';
      const gallery = segments[7] ?? '';
      const image = segments[9];
      if (
        gallery !== DSTACK_COMMUNITY_GALLERY ||
        !this.context.data.region(location) ||
        !/^dstack-/.test(image)
      ) {
        throw new AzureArmError(
          404,
          'ResourceNotFound',
          `The Resource 'Microsoft.Compute/communityGalleries/${gallery}/images/${image}' was not found.`,
        );
      }
      return json({
        name: image,
        location,
        type: 'Microsoft.Compute/communityGalleries/images',
        identifier: { uniqueId: `/CommunityGalleries/${gallery}/Images/${image}` },
        properties: {
          osType: 'Linux',
          osState: 'Generalized',
          hyperVGeneration: 'V2',
          architecture: 'x64',
          identifier: { publisher: 'dstack', offer: 'dstack', sku: image },
        },
      });
    }
    throw this.#noRoute(request);
  }

  /** Compute's resource SKUs (`virtualMachines` sold in each region), kept to `location eq '…'` when filtered. */
  #skus(filter: string | undefined): Json[] {
    const location = /location eq '([^']+)'/i.exec(filter ?? '')?.[1]?.toLowerCase();
    const regions = this.context.data.regions.filter(
      (region) => location === undefined || region.name === location,
    );
    return regions.flatMap((region) =>
      this.context.data.sizesIn(region.name).map((size) => ({
        resourceType: 'virtualMachines',
        name: size.name,
        tier: 'Standard',
        size: size.name.replace(/^Standard_/, ''),
        locations: [region.name],
        locationInfo: [{ location: region.name, zones: ['1', '2', '3'], zoneDetails: [] }],
        capabilities: [
          { name: 'vCPUs', value: String(size.vcpus) },
          { name: 'MemoryGB', value: String(size.memoryGb) },
          { name: 'HyperVGenerations', value: 'V1,V2' },
          ...(size.gpuCount > 0 ? [{ name: 'GPUs', value: String(size.gpuCount) }] : []),
          { name: 'LowPriorityCapable', value: size.prices[region.name]?.[1] == null ? 'False' : 'True' },
        ],
        restrictions: [],
      })),
    );
  }
}
