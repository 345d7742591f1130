/**
 * Resource Manager ids: `/subscriptions/{s}/resourceGroups/{rg}/providers/{namespace}/{type}/{name}`,
 * compared without case as Azure compares them.
 */

export function resourceGroupId(subscriptionId: string, resourceGroup: string): string {
  return `/subscriptions/${subscriptionId}/resourceGroups/${resourceGroup}`;
}

export function resourceId(
  subscriptionId: string,
  resourceGroup: string,
  type: string,
  name: string,
): string {
  return `${resourceGroupId(subscriptionId, resourceGroup)}/providers/${type}/${name}`;
}

/** The key a resource is stored under: its id in lower case. */
export function resourceKey(id: string): string {
  return id.toLowerCase().replace(/\/+$/, '');
}

/** The last segment of an id (the resource's name). */
export function nameOf(id: string): string {
  return id.split('/').filter(Boolean).at(-1) ?? '';
}
