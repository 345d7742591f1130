/**
 * Where a VM's NIC goes and which identity it gets, as dstack's Azure backend decides
 * (`get_resource_group_network_subnet_or_error`, `parse_vm_managed_identity`): the subnet of
 * `subnet_ids` for the region, else the first eligible subnet of the `vpc_ids` network, else the
 * backend's own network; without public IPs a subnet must reach the Internet through a NAT
 * gateway or a peered network (Azure's default outbound access is retired).
 */
import type { NetworkManagementClient, Subnet } from '@azure/arm-network';
import { BackendError } from '@dstack/core';
import type { AzureConfig } from './azure-config.js';
import { defaultNetworkName, defaultSubnetName } from './azure-names.js';

/** The network resource group, network and subnet of a VM's NIC. */
export interface AzureSubnetRef {
  readonly resourceGroup: string;
  readonly network: string;
  readonly subnet: string;
}

/** The `/`-separated parts of a configured id, exactly `count` non-empty ones; else `BackendError(message)`. */
function splitConfiguredId(value: string, count: number, message: string): string[] {
  const parts = value.split('/');
  if (parts.length !== count || parts.some((part) => part === '')) throw new BackendError(message);
  return parts;
}

/** `networkResourceGroup/networkName` of `vpc_ids`; throws naming the format. */
export function parseVpcId(value: string): { resourceGroup: string; network: string } {
  const [resourceGroup = '', network = ''] = splitConfiguredId(
    value,
    2,
    "Network specified in incorrect format. Supported format for `vpc_ids` values: 'networkResourceGroupName/networkName'",
  );
  return { resourceGroup, network };
}

/** `networkResourceGroup/networkName/subnetName` of `subnet_ids`; throws naming the format. */
export function parseSubnetId(value: string): AzureSubnetRef {
  const [resourceGroup = '', network = '', subnet = ''] = splitConfiguredId(
    value,
    3,
    "Subnet specified in incorrect format. Supported format for `subnet_ids` values: 'networkResourceGroupName/networkName/subnetName'",
  );
  return { resourceGroup, network, subnet };
}

/** `managedIdentityResourceGroup/managedIdentityName` of `vm_managed_identity`, or null when unset. */
export function parseVmManagedIdentity(
  value: string | null | undefined,
): { resourceGroup: string; name: string } | null {
  if (value == null) return null;
  const [resourceGroup = '', name = ''] = splitConfiguredId(
    value,
    2,
    "`vm_managed_identity` specified in incorrect format. Supported format: 'managedIdentityResourceGroup/managedIdentityName'",
  );
  return { resourceGroup, name };
}

export function managedIdentityId(subscriptionId: string, resourceGroup: string, name: string): string {
  return `/subscriptions/${subscriptionId}/resourceGroups/${resourceGroup}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${name}`;
}

const isNotFound = (error: unknown) => (error as { statusCode?: number }).statusCode === 404;

/** Whether VMs without public IPs reach the Internet from `subnet`: a NAT gateway, or any peering. */
async function hasOutboundAccess(
  network: NetworkManagementClient,
  resourceGroup: string,
  networkName: string,
  subnet: Subnet,
): Promise<boolean> {
  if (subnet.natGateway) return true;
  for await (const _peering of network.virtualNetworkPeerings.list(resourceGroup, networkName)) return true;
  return false;
}

/**
 * The subnet of a VM in `location`. Throws `BackendError` saying what is missing or unusable (a
 * region neither map names, a network or subnet Azure does not have, a private subnet with no way
 * out).
 */
export async function resolveSubnet(
  network: NetworkManagementClient,
  config: Pick<AzureConfig, 'resource_group' | 'vpc_ids' | 'subnet_ids'>,
  location: string,
  publicIps: boolean,
): Promise<AzureSubnetRef> {
  const configured = config.subnet_ids?.[location];
  if (configured !== undefined) {
    const ref = parseSubnetId(configured);
    let subnet: Subnet;
    try {
      subnet = await network.subnets.get(ref.resourceGroup, ref.network, ref.subnet);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      throw new BackendError(
        `Subnet ${ref.subnet} not found in network ${ref.network} in resource group ${ref.resourceGroup}`,
        { cause: error },
      );
    }
    if (!publicIps && !(await hasOutboundAccess(network, ref.resourceGroup, ref.network, subnet))) {
      throw new BackendError(
        `Subnet ${ref.subnet} in network ${ref.network} does not have outbound internet connectivity. Ensure a NAT Gateway is attached or VNet peering is configured.`,
      );
    }
    return ref;
  }
  let resourceGroup: string;
  let networkName: string;
  if (config.vpc_ids != null) {
    const vpcId = config.vpc_ids[location];
    if (vpcId === undefined) throw new BackendError(`Network not configured for location ${location}`);
    ({ resourceGroup, network: networkName } = parseVpcId(vpcId));
  } else if (config.resource_group) {
    // The backend's own network: made by createBackend with its one subnet.
    return {
      resourceGroup: config.resource_group,
      network: defaultNetworkName(config.resource_group, location),
      subnet: defaultSubnetName(config.resource_group, location),
    };
  } else {
    throw new BackendError('`resource_group` or `vpc_ids` must be specified');
  }
  const eligible: string[] = [];
  try {
    for await (const subnet of network.subnets.list(resourceGroup, networkName)) {
      if (!subnet.name) continue;
      if (publicIps || (await hasOutboundAccess(network, resourceGroup, networkName, subnet)))
        eligible.push(subnet.name);
    }
  } catch (error) {
    if (!isNotFound(error)) throw error;
    throw new BackendError(
      `Network ${networkName} not found in location ${location} in resource group ${resourceGroup}`,
      { cause: error },
    );
  }
  const [first] = eligible;
  if (first === undefined) {
    throw new BackendError(
      publicIps
        ? `Failed to find subnets in network ${networkName}`
        : `Failed to find private subnets with outbound internet connectivity in network ${networkName}`,
    );
  }
  return { resourceGroup, network: networkName, subnet: first };
}
