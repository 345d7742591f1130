/**
 * Virtual machines as Compute answers `virtualMachines` PUT, GET and DELETE: a PUT makes the VM
 * (`Creating`), its OS disk and, from `networkInterfaceConfigurations`, its NIC and public IP, and
 * answers 201 with `Azure-AsyncOperation`; the operation succeeds once the VM's host is up (its
 * addresses then on the NIC and public IP) or fails with `AllocationFailed`, the VM left `Failed`.
 * A DELETE answers 202 (204 for a VM that is not there); its operation ends with the host gone and
 * the disk, NIC and public IP deleted when their `deleteOption` is `Delete` (Azure's default is
 * `Detach`: they stay behind, as on Azure). A DELETE of a VM still `Creating` ends the create
 * operation `Canceled` (`OperationPreempted`), as on Azure.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import { empty, json } from '../../emulator/emulator-responses.js';
import type { EmulatedHosts } from '../emulated-hosts.js';
import type { EmulatedHostKind } from '../hosts/emulated-host-image.js';
import { EmulatedInstanceHost } from '../instance-host.js';
import { AzureArmError } from './azure-arm-error.js';
import type { AzureEmulatorData } from './azure-emulator-data.js';
import type { AzureEmulatorFaults } from './azure-emulator-faults.js';
import { nameOf, resourceId } from './azure-resource-ids.js';
import type { AzureOperation, AzureResource, AzureResources } from './azure-resources.js';

export const VM_TYPE = 'Microsoft.Compute/virtualMachines';
export const DISK_TYPE = 'Microsoft.Compute/disks';
export const NIC_TYPE = 'Microsoft.Network/networkInterfaces';
export const PUBLIC_IP_TYPE = 'Microsoft.Network/publicIPAddresses';
export const SUBNET_TYPE = 'Microsoft.Network/virtualNetworks/subnets';
export const IDENTITY_TYPE = 'Microsoft.ManagedIdentity/userAssignedIdentities';

/** How long the emulated Compute takes, in ms. */
export interface AzureEmulatorTimeline {
  /** Without hosts: from the PUT to the operation's success. */
  provisioningMs: number;
  /** From the DELETE to the VM's removal. */
  deletingMs: number;
}

export const DEFAULT_AZURE_EMULATOR_TIMELINE: AzureEmulatorTimeline = {
  provisioningMs: 1_000,
  deletingMs: 500,
};

export interface AzureVmContext {
  readonly resources: AzureResources;
  readonly data: AzureEmulatorData;
  readonly faults: AzureEmulatorFaults;
  readonly hosts: EmulatedHosts | undefined;
  readonly timeline: AzureEmulatorTimeline;
  readonly onHostError: (vmName: string, error: unknown) => void;
  /** VM names whose host was launched, failed and deleted ones included. */
  readonly launched: string[];
  /** What each VM's PUT started (kept beside the VM, whose document is what GET answers). */
  readonly creations: WeakMap<AzureResource, VmCreation>;
}

export interface VmCreation {
  /** The operation the PUT answered with. */
  readonly operation: AzureOperation;
  /** The VM's host, with hosts (none when its allocation failed). */
  readonly host: EmulatedInstanceHost | undefined;
}

type Json = Record<string, unknown>;

function object(value: unknown): Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
}

function array(value: unknown): Json[] {
  return Array.isArray(value) ? value.map(object) : [];
}

function string(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function invalidParameter(message: string): AzureArmError {
  return new AzureArmError(400, 'InvalidParameter', message);
}

/**
 * dstack's images (Docker, dstack's images pre-pulled by its Packer build) and Azure's Ubuntu
 * images (no Docker).
 */
function hostKindOf(imageReference: Json): EmulatedHostKind {
  const community = string(imageReference.communityGalleryImageId) ?? string(imageReference.id) ?? '';
  if (/dstack/i.test(community)) return 'dstack';
  return 'plain';
}

export function vmDocument(vm: AzureResource): Json {
  return {
    id: vm.id,
    name: vm.name,
    type: vm.type,
    location: vm.location,
    tags: vm.tags,
    ...(vm.identity ? { identity: vm.identity } : {}),
    properties: vm.properties,
  };
}

/** `virtualMachines` PUT. */
export function putVirtualMachine(
  context: AzureVmContext,
  request: { baseUrl: string; apiVersion: string },
  resourceGroup: string,
  name: string,
  body: unknown,
): EmulatorResponse {
  const { resources } = context;
  const id = resourceId(resources.subscriptionId, resourceGroup, VM_TYPE, name);
  const existing = resources.get(id);
  // A repeated create (the same name) is an update on Azure; the backend only repeats its own create.
  if (existing) return json(vmDocument(existing), 200);

  const document = object(body);
  const properties = object(document.properties);
  const location = context.data.requireLocation(document.location, VM_TYPE);
  const vmSize = string(object(properties.hardwareProfile).vmSize) ?? '';
  const size = context.data.size(vmSize);
  if (!size || size.prices[location] === undefined) {
    throw new AzureArmError(
      409,
      'SkuNotAvailable',
      `The requested VM size ${vmSize} is not available in the current region. The sizes available in the current region are: ${context.data
        .sizesIn(location)
        .map((each) => each.name)
        .join(',')}.`,
    );
  }
  const priority = string(properties.priority) === 'Spot' ? 'Spot' : 'Regular';
  const target = { vmSize: size.name, location, priority } as const;
  if (context.faults.fire('SkuNotAvailable', target)) {
    throw new AzureArmError(
      409,
      'SkuNotAvailable',
      `The requested VM size for resource '${size.name}' is currently not available in location '${location}' for subscription '${resources.subscriptionId}'. Please try another size or deploy to a different location or different zone.`,
    );
  }
  if (context.faults.fire('QuotaExceeded', target)) {
    throw new AzureArmError(
      409,
      'OperationNotAllowed',
      `Operation could not be completed as it results in exceeding approved ${priority === 'Spot' ? 'LowPriorityCores' : 'standardNCASv3_T4Family'} Cores quota. Additional details - Deployment Model: Resource Manager, Location: ${location}, Current Limit: 0, Current Usage: 0, Additional Required: ${size.vcpus}, (Minimum) New Limit Required: ${size.vcpus}.`,
    );
  }

  const storage = object(properties.storageProfile);
  const imageReference = object(storage.imageReference);
  const osDiskRequest = object(storage.osDisk);
  const osProfile = object(properties.osProfile);
  const network = object(properties.networkProfile);
  const nicConfigurations = array(network.networkInterfaceConfigurations);
  const nicConfiguration = nicConfigurations[0];
  if (!nicConfiguration) {
    throw invalidParameter(
      "Required parameter 'networkProfile.networkInterfaceConfigurations' is missing (null).",
    );
  }
  const nicProperties = object(nicConfiguration.properties);
  const ipConfiguration = array(nicProperties.ipConfigurations)[0] ?? {};
  const ipProperties = object(ipConfiguration.properties);
  const subnetId = string(object(ipProperties.subnet).id) ?? '';
  if (!resources.get(subnetId)) {
    throw new AzureArmError(
      400,
      'InvalidResourceReference',
      `Resource ${subnetId} referenced by resource ${id} was not found. Please make sure that the referenced resource exists, and that both resources are in the same region.`,
    );
  }
  const nsgId = string(object(nicProperties.networkSecurityGroup).id);
  if (nsgId !== undefined && !resources.get(nsgId)) {
    throw new AzureArmError(
      400,
      'InvalidResourceReference',
      `Resource ${nsgId} referenced by resource ${id} was not found.`,
    );
  }
  const identity = vmIdentity(context, id, object(document.identity));
  const userData = string(properties.userData) ?? '';

  const disk = resources.put({
    id: resourceId(
      resources.subscriptionId,
      resourceGroup,
      DISK_TYPE,
      `${name}_OsDisk_1_${randomBytes(16).toString('hex')}`,
    ),
    name: '',
    type: DISK_TYPE,
    location,
    resourceGroup,
    tags: {},
    properties: {
      diskSizeGB: Number(osDiskRequest.diskSizeGB ?? 30),
      diskState: 'Attached',
      osType: 'Linux',
      provisioningState: 'Succeeded',
    },
  });
  const diskName = nameOf(disk.id);
  resources.put({ ...disk, name: diskName });

  const publicIpConfiguration = object(ipProperties.publicIPAddressConfiguration);
  let publicIp: AzureResource | undefined;
  if (Object.keys(publicIpConfiguration).length > 0) {
    publicIp = resources.put({
      id: resourceId(
        resources.subscriptionId,
        resourceGroup,
        PUBLIC_IP_TYPE,
        `${name}-${string(publicIpConfiguration.name) ?? 'publicIp'}`,
      ),
      name: `${name}-${string(publicIpConfiguration.name) ?? 'publicIp'}`,
      type: PUBLIC_IP_TYPE,
      location,
      resourceGroup,
      tags: {},
      properties: {
        provisioningState: 'Succeeded',
        publicIPAddressVersion: 'IPv4',
        publicIPAllocationMethod: 'Static',
      },
    });
  }
  const nicName = `${name}-${string(nicConfiguration.name) ?? 'nic'}`;
  const nic = resources.put({
    id: resourceId(resources.subscriptionId, resourceGroup, NIC_TYPE, nicName),
    name: nicName,
    type: NIC_TYPE,
    location,
    resourceGroup,
    tags: {},
    properties: {
      provisioningState: 'Succeeded',
      ipConfigurations: [
        {
          id: `${resourceId(resources.subscriptionId, resourceGroup, NIC_TYPE, nicName)}/ipConfigurations/${string(ipConfiguration.name) ?? 'ipconfig1'}`,
          name: string(ipConfiguration.name) ?? 'ipconfig1',
          properties: {
            privateIPAllocationMethod: 'Dynamic',
            subnet: { id: subnetId },
            primary: true,
            ...(publicIp ? { publicIPAddress: { id: publicIp.id } } : {}),
          },
        },
      ],
      ...(nsgId ? { networkSecurityGroup: { id: nsgId } } : {}),
      virtualMachine: { id },
    },
  });

  const vm = resources.put({
    id,
    name,
    type: VM_TYPE,
    location,
    resourceGroup,
    tags: object(document.tags) as Record<string, string>,
    ...(identity ? { identity } : {}),
    properties: {
      vmId: randomUUID(),
      hardwareProfile: { vmSize: size.name },
      storageProfile: {
        imageReference,
        osDisk: {
          osType: 'Linux',
          name: diskName,
          createOption: 'FromImage',
          caching: 'ReadWrite',
          managedDisk: {
            id: disk.id,
            storageAccountType: object(osDiskRequest.managedDisk).storageAccountType ?? 'Standard_LRS',
          },
          deleteOption: string(osDiskRequest.deleteOption) ?? 'Detach',
          diskSizeGB: disk.properties.diskSizeGB,
        },
        dataDisks: [],
      },
      osProfile: {
        computerName: string(osProfile.computerName) ?? name,
        adminUsername: string(osProfile.adminUsername) ?? 'azureuser',
        linuxConfiguration: object(osProfile.linuxConfiguration),
        secrets: [],
      },
      networkProfile: {
        networkInterfaces: [
          {
            id: nic.id,
            properties: { primary: true, deleteOption: string(nicProperties.deleteOption) ?? 'Detach' },
          },
        ],
        ...(string(network.networkApiVersion) ? { networkApiVersion: network.networkApiVersion } : {}),
        networkInterfaceConfigurations: nicConfigurations,
      },
      priority,
      ...(priority === 'Spot' ? { evictionPolicy: string(properties.evictionPolicy) ?? 'Deallocate' } : {}),
      userData,
      provisioningState: 'Creating',
      timeCreated: new Date().toISOString(),
    },
  });

  const operation = context.resources.startOperation('Microsoft.Compute', location);
  // Once a DELETE or an eviction has preempted the creation (or the VM went with its group), how
  // the host's launch ends changes nothing.
  const creating = () => operation.status === 'InProgress' && resources.get(id) === vm;
  const fail = (code: string, message: string) => {
    if (!creating()) return;
    vm.properties.provisioningState = 'Failed';
    resources.finishOperation(operation, { code, message });
  };
  const succeed = (address: string) => {
    if (!creating()) return;
    vm.properties.provisioningState = 'Succeeded';
    setAddresses(resources, nic, publicIp, address);
    resources.finishOperation(operation);
  };
  let host: EmulatedInstanceHost | undefined;
  if (context.faults.fire('AllocationFailed', target)) {
    setTimeout(
      () =>
        fail(
          'AllocationFailed',
          `Allocation failed. We do not have sufficient capacity for the requested VM size in this region. Read more about improving likelihood of allocation success at http://aka.ms/allocation-guidance`,
        ),
      Math.min(context.timeline.provisioningMs, 200),
    ).unref();
  } else if (context.hosts) {
    context.launched.push(name);
    host = new EmulatedInstanceHost(
      context.hosts,
      {
        instanceId: vm.properties.vmId as string,
        userData: Buffer.from(userData, 'base64').toString('utf8'),
        kind: hostKindOf(imageReference),
      },
      (error) => {
        context.onHostError(name, error);
        fail(
          'VMAgentStatusCommunicationError',
          `VM '${name}' has not reported status for VM agent or extensions.`,
        );
      },
      succeed,
    );
  } else {
    context.launched.push(name);
    const octet = (context.launched.length % 250) + 4;
    setTimeout(() => succeed(`10.0.0.${octet}`), context.timeline.provisioningMs).unref();
  }
  context.creations.set(vm, { operation, host });
  return json(vmDocument(vm), 201, {
    'azure-asyncoperation': resources.operationUrl(request.baseUrl, operation, request.apiVersion),
    'retry-after': '1',
  });
}

/**
 * The VM's `identity` as Compute stores it: each user-assigned identity must exist (ARM fails the
 * PUT with `FailedIdentityOperation` otherwise) and is given with its principal and client ids.
 */
function vmIdentity(context: AzureVmContext, vmId: string, identity: Json): Json | undefined {
  const type = string(identity.type);
  if (type === undefined || type === 'None') return undefined;
  if (type !== 'UserAssigned') {
    throw invalidParameter(
      `The identity type '${type}' is not supported by this emulator (UserAssigned only).`,
    );
  }
  const assigned: Json = {};
  for (const identityId of Object.keys(object(identity.userAssignedIdentities))) {
    const resource = context.resources.get(identityId);
    if (!resource || resource.type !== IDENTITY_TYPE) {
      throw new AzureArmError(
        400,
        'FailedIdentityOperation',
        `Identity operation for resource '${vmId}' failed with error 'Failed to perform resource identity operation. Status: 'NotFound'. Response: '{"error":{"code":"NotFound","message":"Resource '${identityId}' was not found."}}'.'.`,
      );
    }
    assigned[resource.id] = {
      principalId: resource.properties.principalId,
      clientId: resource.properties.clientId,
    };
  }
  return { type, userAssignedIdentities: assigned };
}

/** A user-assigned managed identity's PUT: made at once (no long-running operation), with its ids. */
export function putUserAssignedIdentity(
  context: AzureVmContext,
  resourceGroup: string,
  name: string,
  body: Json,
): { resource: AzureResource; created: boolean } {
  const { resources } = context;
  const location = context.data.requireLocation(body.location, IDENTITY_TYPE);
  const id = resourceId(resources.subscriptionId, resourceGroup, IDENTITY_TYPE, name);
  const existing = resources.get(id);
  const resource = resources.put({
    id,
    name,
    type: IDENTITY_TYPE,
    location,
    resourceGroup,
    tags: object(body.tags) as Record<string, string>,
    properties: existing?.properties ?? {
      tenantId: randomUUID(),
      principalId: randomUUID(),
      clientId: randomUUID(),
    },
  });
  return { resource, created: existing === undefined };
}

function setAddresses(
  resources: AzureResources,
  nic: AzureResource,
  publicIp: AzureResource | undefined,
  address: string,
): void {
  const configuration = array(nic.properties.ipConfigurations)[0];
  if (configuration) object(configuration.properties).privateIPAddress = address;
  resources.put(nic);
  // The emulated host has one address, reached from this machine: the VM's public IP is that address.
  if (publicIp) publicIp.properties.ipAddress = address;
}

/** `virtualMachines` GET (with `$expand=instanceView`, the power state too). */
export function getVirtualMachine(
  context: AzureVmContext,
  resourceGroup: string,
  name: string,
  expand: string | undefined,
): EmulatorResponse {
  const vm = context.resources.get(
    resourceId(context.resources.subscriptionId, resourceGroup, VM_TYPE, name),
  );
  if (!vm) {
    throw new AzureArmError(
      404,
      'ResourceNotFound',
      `The Resource '${VM_TYPE}/${name}' under resource group '${resourceGroup}' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix`,
    );
  }
  const document = vmDocument(vm);
  const { userData: _userData, ...properties } = vm.properties;
  document.properties = properties;
  if (expand === 'instanceView') {
    const state = String(vm.properties.provisioningState);
    properties.instanceView = {
      statuses: [
        {
          code: `ProvisioningState/${state.toLowerCase()}`,
          level: 'Info',
          displayStatus: `Provisioning ${state.toLowerCase()}`,
        },
        ...(state === 'Succeeded'
          ? [{ code: 'PowerState/running', level: 'Info', displayStatus: 'VM running' }]
          : []),
      ],
    };
  }
  return json(document);
}

/** `virtualMachines` DELETE. */
export function deleteVirtualMachine(
  context: AzureVmContext,
  request: { baseUrl: string; apiVersion: string },
  resourceGroup: string,
  name: string,
): EmulatorResponse {
  const { resources } = context;
  const vm = resources.get(resourceId(resources.subscriptionId, resourceGroup, VM_TYPE, name));
  if (!vm) return empty(204);
  vm.properties.provisioningState = 'Deleting';
  const operation = resources.startOperation('Microsoft.Compute', vm.location);
  const hostGone = stopVmHost(context, vm);
  const removal = new Promise((resolve) => setTimeout(resolve, context.timeline.deletingMs).unref());
  void Promise.allSettled([hostGone, removal]).then(() => {
    removeVirtualMachine(resources, vm);
    resources.finishOperation(operation);
  });
  const url = resources.operationUrl(request.baseUrl, operation, request.apiVersion);
  return empty(202, { 'azure-asyncoperation': url, location: `${url}&monitor=true`, 'retry-after': '1' });
}

/**
 * Stops the VM's host (once its launch settles, so none is left behind); a creation still under
 * way ends as Azure ends a create that a delete overtook. Resolves once the host is gone.
 */
export function stopVmHost(context: AzureVmContext, vm: AzureResource): Promise<void> {
  const creation = context.creations.get(vm);
  if (!creation) return Promise.resolve();
  if (creation.operation.status === 'InProgress') {
    context.resources.cancelOperation(creation.operation, {
      code: 'OperationPreempted',
      message: 'Operation execution has been preempted by a more recent operation.',
    });
  }
  return creation.host?.stop() ?? Promise.resolve();
}

/** Removes the VM and what it created with `deleteOption: Delete`; a detached NIC loses its VM. */
function removeVirtualMachine(resources: AzureResources, vm: AzureResource): void {
  resources.delete(vm.id);
  const storage = object(vm.properties.storageProfile);
  const osDisk = object(storage.osDisk);
  const diskId = string(object(osDisk.managedDisk).id);
  if (diskId) {
    if (osDisk.deleteOption === 'Delete') resources.delete(diskId);
    else {
      const disk = resources.get(diskId);
      if (disk) disk.properties.diskState = 'Unattached';
    }
  }
  // The public IP's deleteOption is in the configuration the VM was created with.
  const nicConfiguration = object(
    array(object(vm.properties.networkProfile).networkInterfaceConfigurations)[0],
  );
  const ipConfiguration = object(array(object(nicConfiguration.properties).ipConfigurations)[0]);
  const publicIpDeleteOption = object(
    object(object(ipConfiguration.properties).publicIPAddressConfiguration).properties,
  ).deleteOption;
  for (const reference of array(object(vm.properties.networkProfile).networkInterfaces)) {
    const nicId = string(reference.id) ?? '';
    const nic = resources.get(nicId);
    if (!nic) continue;
    const publicIpId = string(
      object(object(array(nic.properties.ipConfigurations)[0]?.properties).publicIPAddress).id,
    );
    if (publicIpId && publicIpDeleteOption === 'Delete') resources.delete(publicIpId);
    if (object(reference.properties).deleteOption === 'Delete') resources.delete(nicId);
    else delete nic.properties.virtualMachine;
  }
}

/**
 * Azure takes a spot VM back: its host stops at once; with `evictionPolicy: Delete` the VM goes
 * with what it created (their `deleteOption`), with `Deallocate` it stays, stopped.
 */
export function evictVirtualMachine(context: AzureVmContext, vm: AzureResource): void {
  void stopVmHost(context, vm).catch((error: unknown) =>
    console.error(`Azure emulator: cannot stop the host of ${vm.name}: ${String(error)}`),
  );
  if (vm.properties.evictionPolicy === 'Delete') removeVirtualMachine(context.resources, vm);
  else vm.properties.provisioningState = 'Succeeded';
}
