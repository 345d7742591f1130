/**
 * A cluster fleet's placement group on GCP, as dstack makes it: a compact placement resource
 * policy (`groupPlacementPolicy {availabilityDomainCount: 1, collocation: COLLOCATED}`) named as
 * the server names the group, in the fleet's region; the fleet's instances name it in
 * `resourcePolicies`, and it is deleted with the fleet.
 */
import {
  BackendError,
  type InstanceOffer,
  type PlacementGroup,
  type PlacementGroupProvisioningData,
} from '@dstack/core';
import type { GcpComputeApi } from './gcp-api.js';
import { GCP_BACKEND_TYPE } from './gcp-config.js';
import {
  type GcpOperationResource,
  type WaitForOperationOptions,
  waitForGcpOperation,
} from './gcp-operations.js';
import { GcpApiCallError, isNotFound } from './gcp-rest.js';

/** What instances name in `resourcePolicies`: `projects/{p}/regions/{r}/resourcePolicies/{name}`. */
export function resourcePolicyReference(project: string, region: string, name: string): string {
  return `projects/${project}/regions/${region}/resourcePolicies/${name}`;
}

/** Makes the policy; one a previous call made (409, the same name) is it. */
export async function createGcpPlacementGroup(
  api: GcpComputeApi,
  placementGroup: PlacementGroup,
  options: WaitForOperationOptions = {},
): Promise<PlacementGroupProvisioningData> {
  const region = placementGroup.configuration.region;
  try {
    const operation = await api.post<GcpOperationResource>(`regions/${region}/resourcePolicies`, {
      name: placementGroup.name,
      region,
      groupPlacementPolicy: { availabilityDomainCount: 1, collocation: 'COLLOCATED' },
    });
    await waitForGcpOperation(
      api,
      `regions/${region}`,
      operation,
      `creating resource policy ${placementGroup.name}`,
      options,
    );
  } catch (error) {
    if (!(error instanceof GcpApiCallError && error.statusCode === 409)) throw error;
  }
  return { backend: GCP_BACKEND_TYPE, backend_data: null };
}

/** Deletes the policy; a missing one is fine, one instances still use is a `BackendError` (tried again later). */
export async function deleteGcpPlacementGroup(
  api: GcpComputeApi,
  placementGroup: PlacementGroup,
  options: WaitForOperationOptions = {},
): Promise<void> {
  const region = placementGroup.configuration.region;
  try {
    const operation = await api.delete<GcpOperationResource>(
      `regions/${region}/resourcePolicies/${encodeURIComponent(placementGroup.name)}`,
    );
    await waitForGcpOperation(
      api,
      `regions/${region}`,
      operation,
      `deleting resource policy ${placementGroup.name}`,
      options,
    );
  } catch (error) {
    if (isNotFound(error)) return;
    if (error instanceof GcpApiCallError && /is already being used by/.test(error.message)) {
      throw new BackendError(`Placement group ${placementGroup.name} is in use: ${error.message}`, {
        cause: error,
      });
    }
    throw error;
  }
}

/** dstack's rule: a policy is regional, so any offer of its region fits. */
export function isSuitableGcpPlacementGroup(placementGroup: PlacementGroup, offer: InstanceOffer): boolean {
  return placementGroup.configuration.region === offer.region;
}
