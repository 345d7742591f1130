import type { VirtualMachine } from '@azure/arm-compute';
import { defaultCatalog } from '@dstack/catalog';
import {
  BackendAuthenticationError,
  BackendError,
  BackendRateLimitError,
  buildVmUserData,
  type Capability,
  type CatalogQueryable,
  type ComputeWithCreateInstance,
  type ComputeWithInstanceVolumes,
  type ComputeWithMultinode,
  type ComputeWithPrivileged,
  generateUniqueBackendName,
  getCatalogOffers,
  type InstanceConfiguration,
  type InstanceOfferWithAvailability,
  type InstanceStatusAtProvider,
  type JobProvisioningData,
  mergeTags,
  NoCapacityError,
  type PlacementGroup,
  ProvisioningError,
  type Requirements,
  type RunJobParams,
  runJobWithCreateInstance,
  withAvailability,
} from '@dstack/core';
import { AzureClients, azureErrorCode } from './azure-clients.js';
import { AZURE_BACKEND_TYPE, type AzureConfig } from './azure-config.js';
import { imageReference } from './azure-images.js';
import {
  AZURE_DEFAULT_LOCATIONS,
  AZURE_MAX_RESOURCE_NAME_LENGTH,
  defaultSecurityGroupName,
  nameFromId,
  networkSecurityGroupId,
  subnetId,
} from './azure-names.js';
import { managedIdentityId, parseVmManagedIdentity, resolveSubnet } from './azure-networks.js';
import { AZURE_CONFIGURABLE_DISK_SIZE, isSupportedVmSize, launchableSizes } from './azure-offers.js';

/**
 * What this Compute implements, declared on the plugin descriptor too. `multinode`: the VMs of a
 * region share its network (the backend's, or the `vpc_ids`/`subnet_ids` one) and reach each other
 * on their private IPs (Azure's default `AllowVnetInBound` rule), as dstack's.
 */
export const AZURE_CAPABILITIES: readonly Capability[] = [
  'create-instance',
  'privileged',
  'instance-volumes',
  'multinode',
];

/** Settings of `createAzureBackend`. */
export interface AzureBackendSettings {
  /** The backend's config with creds, as the configurator reads it from the stored record. Required. */
  config: AzureConfig;
  /** Where offers come from. Default: the process's `defaultCatalog()` (the server's: gpuhunt's published catalogs, else the bundled snapshot). */
  catalog?: CatalogQueryable;
  /** How often long-running operations are polled, in ms. Default: the SDK's (its `Retry-After`, else 2 s). */
  pollIntervalMs?: number;
}

/** Codes of a create Azure could not place: the next offer may succeed (dstack's `NoCapacityError`). */
const CAPACITY_ERROR_CODES: ReadonlySet<string> = new Set([
  'AllocationFailed',
  'OverconstrainedAllocationRequest',
  'SkuNotAvailable',
  'OperationNotAllowed',
  'ZonalAllocationFailed',
]);

/** Codes of refused credentials or denied calls from Resource Manager. */
const AUTH_ERROR_CODES: ReadonlySet<string> = new Set([
  'InvalidAuthenticationToken',
  'AuthenticationFailed',
  'AuthorizationFailed',
]);

/** What `@azure/identity` throws when Entra ID refused the credential, or there is none. */
const IDENTITY_ERROR_NAMES: ReadonlySet<string> = new Set([
  'AuthenticationError',
  'AuthenticationRequiredError',
  'CredentialUnavailableError',
]);

/**
 * `error` as core's typed error when Azure refused the credentials or throttled the call, so the
 * server can tell these from a capacity shortage; any other error as it is.
 */
export function typedAzureError(error: unknown): unknown {
  const name = error instanceof Error ? error.name : undefined;
  const code = azureErrorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  if ((name && IDENTITY_ERROR_NAMES.has(name)) || (code && AUTH_ERROR_CODES.has(code))) {
    return new BackendAuthenticationError(message, { cause: error });
  }
  const status = (error as { statusCode?: unknown }).statusCode;
  if (status === 429 || code === 'TooManyRequests')
    return new BackendRateLimitError(message, { cause: error });
  return error;
}

/**
 * Runs jobs on Azure VMs through Azure's SDK: `createInstance` creates a VM from dstack's image
 * with its NIC and public IP (deleted with it), whose custom data (cloud-init) starts the shim;
 * `runJob` is `createInstance` for the job.
 */
export class AzureCompute
  implements
    ComputeWithCreateInstance,
    ComputeWithPrivileged,
    ComputeWithInstanceVolumes,
    ComputeWithMultinode
{
  readonly type = AZURE_BACKEND_TYPE;
  readonly capabilities = AZURE_CAPABILITIES;
  readonly config: AzureConfig;
  readonly #clients: AzureClients;
  readonly #catalog: CatalogQueryable | undefined;
  readonly #pollIntervalMs: number | undefined;
  readonly #launchable = new Map<string, Promise<Set<string> | undefined>>();

  constructor(settings: AzureBackendSettings) {
    this.config = settings.config;
    this.#clients = new AzureClients(settings.config);
    this.#catalog = settings.catalog;
    this.#pollIntervalMs = settings.pollIntervalMs;
  }

  get #resourceGroup(): string {
    const group = this.config.resource_group;
    if (!group) throw new BackendError('The azure backend has no resource_group (createBackend fills it)');
    return group;
  }

  #lroOptions() {
    return this.#pollIntervalMs === undefined ? {} : { updateIntervalInMs: this.#pollIntervalMs };
  }

  /** The catalog's Azure offers in the configured regions and dstack's series, with SKU availability. */
  async getOffers(requirements: Requirements): Promise<InstanceOfferWithAvailability[]> {
    const offers = await getCatalogOffers(this.#catalog ?? defaultCatalog(), AZURE_BACKEND_TYPE, {
      requirements,
      locations: this.config.regions ?? AZURE_DEFAULT_LOCATIONS,
      configurableDiskSize: AZURE_CONFIGURABLE_DISK_SIZE,
      extraFilter: (offer) => isSupportedVmSize(offer.instance.name),
    });
    return Promise.all(
      offers.map(async (offer) => {
        const launchable = await this.#launchableIn(offer.region);
        const availability =
          launchable === undefined
            ? 'unknown'
            : launchable.has(offer.instance.name)
              ? 'available'
              : 'no_quota';
        return withAvailability(offer, availability);
      }),
    );
  }

  /** The sizes of a region's SKUs, read once; undefined when they could not be read. */
  #launchableIn(location: string): Promise<Set<string> | undefined> {
    let sizes = this.#launchable.get(location);
    if (!sizes) {
      sizes = launchableSizes(this.#clients.compute, location).catch(() => undefined);
      this.#launchable.set(location, sizes);
    }
    return sizes;
  }

  runJob(params: RunJobParams): Promise<JobProvisioningData> {
    return runJobWithCreateInstance(this, params);
  }

  /**
   * Creates the VM named from `instance_id` (a retried launch finds the VM the first one made)
   * and waits for Azure's long-running operation, as dstack does: an allocation failure deletes
   * the VM and is a `NoCapacityError`, as are a size or quota Azure refuses at once.
   */
  async createInstance(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
    placementGroup: PlacementGroup | null,
  ): Promise<JobProvisioningData> {
    if (placementGroup) throw new BackendError('The azure backend does not support placement groups yet');
    try {
      return await this.#createInstance(offer, config);
    } catch (error) {
      throw typedAzureError(error);
    }
  }

  async #createInstance(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
  ): Promise<JobProvisioningData> {
    const group = this.#resourceGroup;
    const location = offer.region;
    // The same name for the same launch (a retry finds its VM); another offer tried for the same
    // instance gets another name, so it never meets the VM a failed offer is still deleting.
    const name = generateUniqueBackendName(config.project_name, config.instance_name, {
      seed: `${config.instance_id}/${location}/${offer.instance.name}/${offer.instance.resources.spot}`,
      maxLength: AZURE_MAX_RESOURCE_NAME_LENGTH,
    });
    const existing = await this.#findVm(name);
    if (existing && existing.provisioningState !== 'Failed') return this.#provisioningData(offer, name);

    const publicIps = this.config.public_ips ?? true;
    const subnet = await resolveSubnet(this.#clients.network, this.config, location, publicIps);
    const identity = parseVmManagedIdentity(this.config.vm_managed_identity);
    const keys = config.ssh_keys.map((key) => key.public.trim());
    const tags = mergeTags(
      {
        owner: 'dstack',
        dstack_project: config.project_name,
        dstack_name: config.instance_name,
        dstack_user: config.user,
      },
      this.config.tags,
      config.tags,
    );
    const parameters: VirtualMachine = {
      location,
      tags,
      hardwareProfile: { vmSize: offer.instance.name },
      storageProfile: {
        imageReference: await imageReference(this.#clients.compute, location, offer.instance),
        osDisk: {
          createOption: 'FromImage',
          managedDisk: { storageAccountType: 'StandardSSD_LRS' },
          diskSizeGB: Math.round(offer.instance.resources.disk.size_mib / 1024),
          deleteOption: 'Delete',
        },
      },
      osProfile: {
        computerName: 'runnervm',
        adminUsername: 'ubuntu',
        linuxConfiguration: {
          ssh: {
            publicKeys: keys.map((keyData) => ({ path: '/home/ubuntu/.ssh/authorized_keys', keyData })),
          },
        },
      },
      networkProfile: {
        networkApiVersion: '2020-11-01',
        networkInterfaceConfigurations: [
          {
            name: 'nic_config',
            // The NIC and its public IP go with the VM: a deleted fleet leaves nothing behind.
            deleteOption: 'Delete',
            networkSecurityGroup: {
              id: networkSecurityGroupId(
                this.config.subscription_id,
                group,
                defaultSecurityGroupName(group, location),
              ),
            },
            ipConfigurations: [
              {
                name: 'ip_config',
                subnet: {
                  id: subnetId(
                    this.config.subscription_id,
                    subnet.resourceGroup,
                    subnet.network,
                    subnet.subnet,
                  ),
                },
                ...(publicIps
                  ? { publicIPAddressConfiguration: { name: 'public_ip_config', deleteOption: 'Delete' } }
                  : {}),
              },
            ],
          },
        ],
      },
      ...(identity
        ? {
            identity: {
              type: 'UserAssigned',
              userAssignedIdentities: {
                [managedIdentityId(this.config.subscription_id, identity.resourceGroup, identity.name)]: {},
              },
            },
          }
        : {}),
      priority: offer.instance.resources.spot ? 'Spot' : 'Regular',
      ...(offer.instance.resources.spot ? { evictionPolicy: 'Delete' } : {}),
      userData: Buffer.from(buildVmUserData(config), 'utf8').toString('base64'),
    };
    try {
      const poller = await this.#clients.compute.virtualMachines.beginCreateOrUpdate(
        group,
        name,
        parameters,
        this.#lroOptions(),
      );
      await poller.pollUntilDone();
    } catch (error) {
      const code = azureErrorCode(error);
      if (code === undefined || !CAPACITY_ERROR_CODES.has(code)) throw error;
      // Azure may leave the VM resource of a failed allocation: delete it, as dstack does, and
      // wait, so the failed offer leaves nothing behind.
      await this.#clients.compute.virtualMachines
        .beginDeleteAndWait(group, name, this.#lroOptions())
        .catch(() => undefined);
      throw new NoCapacityError(`${code}: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    }
    return this.#provisioningData(offer, name);
  }

  async #findVm(name: string): Promise<VirtualMachine | undefined> {
    try {
      return await this.#clients.compute.virtualMachines.get(this.#resourceGroup, name);
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 404) return undefined;
      throw error;
    }
  }

  #provisioningData(offer: InstanceOfferWithAvailability, name: string): JobProvisioningData {
    return {
      backend: AZURE_BACKEND_TYPE,
      instance_type: offer.instance,
      instance_id: name,
      hostname: null,
      internal_ip: null,
      public_ip_enabled: this.config.public_ips ?? true,
      region: offer.region,
      availability_zone: null,
      price: offer.price,
      username: 'ubuntu',
      ssh_port: null,
      dockerized: true,
      backend_data: null,
    };
  }

  /** Deletes the VM (its disk, NIC and public IP go with it); a VM that is not there is no error. */
  async terminateInstance(instanceId: string, _region: string, _backendData?: string | null): Promise<void> {
    try {
      // Accepted is enough: Azure finishes the delete, and a repeated delete of a deleting VM is accepted too.
      await this.#clients.compute.virtualMachines.beginDelete(
        this.#resourceGroup,
        instanceId,
        this.#lroOptions(),
      );
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 404) return;
      throw typedAzureError(error);
    }
  }

  /**
   * The contract's `instanceStatus`: Azure's view of a VM whose agents stopped answering. A spot VM
   * (created with `evictionPolicy: Delete`) that is gone was evicted; any other missing, failed or
   * deleting VM is gone.
   */
  async instanceStatus(provisioningData: JobProvisioningData): Promise<InstanceStatusAtProvider> {
    const vm = await this.#findVm(provisioningData.instance_id);
    if (!vm) return provisioningData.instance_type.resources.spot ? 'interrupted' : 'gone';
    return vm.provisioningState === 'Failed' || vm.provisioningState === 'Deleting' ? 'gone' : 'running';
  }

  /**
   * Looks the VM up once: its addresses from its NIC (the private IP) and public IP once
   * provisioned. A VM that is gone or failed fails provisioning.
   */
  async updateProvisioningData(provisioningData: JobProvisioningData): Promise<JobProvisioningData> {
    let vm: VirtualMachine | undefined;
    try {
      vm = await this.#findVm(provisioningData.instance_id);
    } catch (error) {
      const typed = typedAzureError(error);
      if (typed instanceof BackendRateLimitError) return provisioningData;
      throw typed;
    }
    if (!vm) throw new ProvisioningError(`VM ${provisioningData.instance_id} no longer exists`);
    if (vm.provisioningState === 'Failed' || vm.provisioningState === 'Deleting') {
      throw new ProvisioningError(`VM ${provisioningData.instance_id} is ${vm.provisioningState}`);
    }
    if (vm.provisioningState !== 'Succeeded') return provisioningData;
    const nicId = vm.networkProfile?.networkInterfaces?.[0]?.id;
    if (!nicId) return provisioningData;
    const nic = await this.#clients.network.networkInterfaces.get(this.#resourceGroup, nameFromId(nicId));
    const ipConfiguration = nic.ipConfigurations?.[0];
    const privateIp = ipConfiguration?.privateIPAddress;
    let hostname = privateIp;
    if (provisioningData.public_ip_enabled) {
      const publicIpId = ipConfiguration?.publicIPAddress?.id;
      if (!publicIpId) return provisioningData;
      const publicIp = await this.#clients.network.publicIPAddresses.get(
        this.#resourceGroup,
        nameFromId(publicIpId),
      );
      hostname = publicIp.ipAddress;
    }
    if (!hostname) return provisioningData;
    return { ...provisioningData, hostname, internal_ip: privateIp ?? null, ssh_port: 22 };
  }
}

/** The azure backend's Compute, for use without a server (tests, scripts). */
export function createAzureBackend(settings: AzureBackendSettings): AzureCompute {
  return new AzureCompute(settings);
}
