/**
 * The resources of the emulated subscription: resource groups and the ARM resources in them
 * (virtual networks, network security groups, NICs, public IPs, disks, VMs), and the
 * long-running operations Resource Manager reports their creation and deletion through
 * (`Azure-AsyncOperation` status documents: `InProgress`, then `Succeeded` or `Failed` with an
 * error).
 */
import { randomUUID } from 'node:crypto';
import { resourceGroupId, resourceKey } from './azure-resource-ids.js';

export interface AzureResourceGroup {
  readonly name: string;
  readonly location: string;
  tags: Record<string, string>;
}

/** One ARM resource as Azure stores it (the document GET answers). */
export interface AzureResource {
  readonly id: string;
  readonly name: string;
  /** `Microsoft.Network/virtualNetworks`, … */
  readonly type: string;
  readonly location: string;
  readonly resourceGroup: string;
  tags: Record<string, string>;
  /** A VM's managed identities (`type`, `userAssignedIdentities`). */
  identity?: Record<string, unknown>;
  properties: Record<string, unknown>;
}

export type AzureOperationStatus = 'InProgress' | 'Succeeded' | 'Failed' | 'Canceled';

export interface AzureOperation {
  readonly id: string;
  /** The provider namespace whose `locations/{location}/operations/{id}` URL reports it. */
  readonly namespace: string;
  readonly location: string;
  readonly startTime: string;
  status: AzureOperationStatus;
  endTime?: string;
  error?: { code: string; message: string };
}

export class AzureResources {
  readonly #groups = new Map<string, AzureResourceGroup>();
  readonly #resources = new Map<string, AzureResource>();
  readonly #operations = new Map<string, AzureOperation>();

  constructor(
    readonly subscriptionId: string,
    private readonly clock: () => number,
  ) {}

  group(name: string): AzureResourceGroup | undefined {
    return this.#groups.get(name.toLowerCase());
  }

  groups(): AzureResourceGroup[] {
    return [...this.#groups.values()];
  }

  putGroup(
    name: string,
    location: string,
    tags: Record<string, string>,
  ): { group: AzureResourceGroup; created: boolean } {
    const existing = this.group(name);
    if (existing) {
      existing.tags = tags;
      return { group: existing, created: false };
    }
    const group = { name, location, tags };
    this.#groups.set(name.toLowerCase(), group);
    return { group, created: true };
  }

  /** Removes the group with every resource in it. */
  deleteGroup(name: string): void {
    this.#groups.delete(name.toLowerCase());
    const prefix = `${resourceKey(resourceGroupId(this.subscriptionId, name))}/`;
    for (const key of [...this.#resources.keys()]) if (key.startsWith(prefix)) this.#resources.delete(key);
  }

  get(id: string): AzureResource | undefined {
    return this.#resources.get(resourceKey(id));
  }

  put(resource: AzureResource): AzureResource {
    this.#resources.set(resourceKey(resource.id), resource);
    return resource;
  }

  delete(id: string): boolean {
    return this.#resources.delete(resourceKey(id));
  }

  /** Resources of `type`, in one group when given. */
  list(type: string, resourceGroup?: string): AzureResource[] {
    return [...this.#resources.values()].filter(
      (resource) =>
        resource.type.toLowerCase() === type.toLowerCase() &&
        (resourceGroup === undefined || resource.resourceGroup.toLowerCase() === resourceGroup.toLowerCase()),
    );
  }

  startOperation(namespace: string, location: string): AzureOperation {
    const operation: AzureOperation = {
      id: randomUUID(),
      namespace,
      location,
      startTime: new Date(this.clock()).toISOString(),
      status: 'InProgress',
    };
    this.#operations.set(operation.id, operation);
    return operation;
  }

  finishOperation(operation: AzureOperation, error?: { code: string; message: string }): void {
    operation.status = error ? 'Failed' : 'Succeeded';
    operation.endTime = new Date(this.clock()).toISOString();
    if (error) operation.error = error;
  }

  /** Ends the operation `Canceled`: a later operation on its resource overtook it. */
  cancelOperation(operation: AzureOperation, error: { code: string; message: string }): void {
    operation.status = 'Canceled';
    operation.endTime = new Date(this.clock()).toISOString();
    operation.error = error;
  }

  operation(id: string): AzureOperation | undefined {
    return this.#operations.get(id);
  }

  /** `{base}/subscriptions/{s}/providers/{namespace}/locations/{location}/operations/{id}`. */
  operationUrl(baseUrl: string, operation: AzureOperation, apiVersion: string): string {
    return `${baseUrl}/subscriptions/${this.subscriptionId}/providers/${operation.namespace}/locations/${operation.location}/operations/${operation.id}?api-version=${apiVersion}`;
  }
}
