/** The names dstack gives the resources of its Azure backend (dstack's `azure/utils.py`). */

/** Azure's longest VM name (Linux). */
export const AZURE_MAX_RESOURCE_NAME_LENGTH = 64;

/** The resource group the backend creates for a project without `resource_group`. */
export function defaultResourceGroupName(projectName: string): string {
  return `dstack-${projectName}`;
}

export function defaultNetworkName(resourceGroup: string, location: string): string {
  return `${resourceGroup}-${location}-default-network`;
}

export function defaultSubnetName(resourceGroup: string, location: string): string {
  return `${resourceGroup}-${location}-default-subnet`;
}

export function defaultSecurityGroupName(resourceGroup: string, location: string): string {
  return `${resourceGroup}-${location}-default-security-group`;
}

export function gatewaySecurityGroupName(resourceGroup: string, location: string): string {
  return `${resourceGroup}-${location}-gateway-security-group`;
}

export function networkSecurityGroupId(subscriptionId: string, resourceGroup: string, name: string): string {
  return `/subscriptions/${subscriptionId}/resourceGroups/${resourceGroup}/providers/Microsoft.Network/networkSecurityGroups/${name}`;
}

export function subnetId(
  subscriptionId: string,
  resourceGroup: string,
  network: string,
  subnet: string,
): string {
  return `/subscriptions/${subscriptionId}/resourceGroups/${resourceGroup}/providers/Microsoft.Network/virtualNetworks/${network}/subnets/${subnet}`;
}

/** The last segment of a resource id: the resource's name. */
export function nameFromId(id: string): string {
  return id.split('/').filter(Boolean).at(-1) ?? '';
}

/** dstack's Azure locations, the default of `regions`. */
export const AZURE_DEFAULT_LOCATIONS: readonly string[] = [
  'centralus',
  'eastus',
  'eastus2',
  'southcentralus',
  'westus2',
  'westus3',
  'canadacentral',
  'francecentral',
  'germanywestcentral',
  'northeurope',
  'swedencentral',
  'uksouth',
  'westeurope',
  'southeastasia',
  'eastasia',
  'brazilsouth',
];

/** Where the backend creates the project's resource group (dstack's `MAIN_LOCATION`). */
export const AZURE_MAIN_LOCATION = 'eastus';
