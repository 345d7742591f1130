import { createHash } from 'node:crypto';
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
  type ComputeWithPrivileged,
  generateUniqueBackendName,
  getCatalogOffers,
  type InstanceConfiguration,
  type InstanceOfferWithAvailability,
  type InstanceStatusAtProvider,
  type JobProvisioningData,
  NoCapacityError,
  type PlacementGroup,
  ProvisioningError,
  type Requirements,
  type RunJobParams,
  runJobWithCreateInstance,
  withAvailability,
} from '@dstack/core';
import { listAll, OciClients, ociErrorOf } from './oci-clients.js';
import { OCI_BACKEND_TYPE, type OciConfig } from './oci-config.js';
import { dstackImageId } from './oci-images.js';
import {
  isSupportedShape,
  OCI_CONFIGURABLE_DISK_SIZE,
  type RegionShapes,
  regionShapes,
  shapeAvailability,
} from './oci-offers.js';
import { prepareSecurityGroup } from './oci-security-group.js';

/**
 * What this Compute implements, declared on the plugin descriptor too. `multinode` as dstack's
 * (`ComputeWithMultinodeSupport`): a cluster's nodes are separate instances of the region's subnet,
 * reaching each other on their private IPs through the security group's one rule.
 */
export const OCI_CAPABILITIES: readonly Capability[] = [
  'create-instance',
  'privileged',
  'instance-volumes',
  'multinode',
];

/** Settings of `createOciBackend`. */
export interface OciBackendSettings {
  /** The backend's config with creds, as the configurator reads it from the stored record. Required. */
  config: OciConfig;
  /** Where offers come from. Default: the process's `defaultCatalog()`. */
  catalog?: CatalogQueryable;
}

/**
 * `error` as core's typed error when OCI refused the signature (401) or throttled the call (429),
 * so the server tells these from a capacity shortage; any other error as it is.
 */
export function typedOciError(error: unknown): unknown {
  const oci = ociErrorOf(error);
  if (oci?.status === 401)
    return new BackendAuthenticationError(`${oci.code}: ${oci.message}`, { cause: error });
  if (oci?.status === 429) return new BackendRateLimitError(`${oci.code}: ${oci.message}`, { cause: error });
  return error;
}

/** dstack's: a launch refused for capacity or limits, where the next offer may succeed. */
function isCapacityError(error: unknown): boolean {
  const oci = ociErrorOf(error);
  return (
    oci !== undefined &&
    (oci.code === 'LimitExceeded' ||
      oci.code === 'QuotaExceeded' ||
      oci.message.includes('Out of host capacity'))
  );
}

/**
 * Runs jobs on OCI instances through OCI's SDK, as dstack's OCI backend: offers from the catalog
 * with capacity reports, instances from dstack's marketplace image with cloud-init `user_data`
 * (core's VM bootstrap), a VNIC with a public IP in the backend's subnet and its network security
 * group, preemptible instances for spot.
 */
export class OciCompute
  implements ComputeWithCreateInstance, ComputeWithPrivileged, ComputeWithInstanceVolumes
{
  readonly type = OCI_BACKEND_TYPE;
  readonly capabilities = OCI_CAPABILITIES;
  readonly config: OciConfig;
  readonly #clients: OciClients;
  readonly #catalog: CatalogQueryable | undefined;

  constructor(settings: OciBackendSettings) {
    this.config = settings.config;
    this.#clients = new OciClients(settings.config);
    this.#catalog = settings.catalog;
  }

  get #compartmentId(): string {
    const id = this.config.compartment_id;
    if (!id) throw new BackendError('The oci backend has no compartment_id (createBackend fills it)');
    return id;
  }

  /** The catalog's OCI offers of dstack's shapes in the configured regions, with capacity-report availability. */
  async getOffers(requirements: Requirements): Promise<InstanceOfferWithAvailability[]> {
    const offers = await getCatalogOffers(this.#catalog ?? defaultCatalog(), OCI_BACKEND_TYPE, {
      requirements,
      locations: this.config.regions ?? Object.keys(this.config.subnet_ids_per_region),
      configurableDiskSize: OCI_CONFIGURABLE_DISK_SIZE,
      extraFilter: (offer) => isSupportedShape(offer.instance.name),
    });
    const shapesByRegion = new Map<string, Set<string>>();
    for (const offer of offers) {
      const shapes = shapesByRegion.get(offer.region) ?? new Set<string>();
      shapes.add(offer.instance.name);
      shapesByRegion.set(offer.region, shapes);
    }
    const regions = new Map(
      await Promise.all(
        [...shapesByRegion].map(
          async ([region, shapes]) => [region, await this.#regionShapes(region, shapes)] as const,
        ),
      ),
    );
    return offers.map((offer) => {
      const { availability, zones } = shapeAvailability(regions.get(offer.region), offer.instance.name);
      return withAvailability(offer, availability, { availability_zones: zones });
    });
  }

  /**
   * The region's shapes and capacity (capacity reports are asked each time: capacity changes);
   * undefined when OCI could not be asked (the offers' availability is then unknown, and the
   * launch meets the error itself).
   */
  #regionShapes(region: string, shapes: ReadonlySet<string>): Promise<RegionShapes | undefined> {
    return regionShapes(
      this.#clients.region(region),
      this.#clients.tenancy,
      this.#compartmentId,
      shapes,
    ).catch(() => undefined);
  }

  /** The domain to launch in: the offer's first available one; when availability is unknown, the region's first. */
  async #launchDomain(offer: InstanceOfferWithAvailability): Promise<string> {
    const domain = offer.availability_zones?.[0];
    if (domain) return domain;
    if (offer.availability !== 'unknown')
      throw new NoCapacityError('Shape unavailable in all availability domains');
    const { items } = await this.#clients
      .region(offer.region)
      .identity.listAvailabilityDomains({ compartmentId: this.#clients.tenancy });
    const first = items[0]?.name;
    if (!first) throw new NoCapacityError(`No availability domain in ${offer.region}`);
    return first;
  }

  runJob(params: RunJobParams): Promise<JobProvisioningData> {
    return runJobWithCreateInstance(this, params);
  }

  /**
   * Launches the instance in the offer's first available domain, as dstack: dstack's image,
   * cloud-init user data, a VNIC in the region's subnet and the project's security group, a
   * preemptible instance for spot. `opc-retry-token` (from `instance_id` and the offer) makes a
   * repeated launch return the first instance. Out of host capacity and limits or quotas
   * exceeded are `NoCapacityError`.
   */
  async createInstance(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
    placementGroup: PlacementGroup | null,
  ): Promise<JobProvisioningData> {
    if (placementGroup) throw new BackendError('The oci backend does not support placement groups');
    const region = this.#clients.region(offer.region);
    const compartmentId = this.#compartmentId;
    const subnetId = this.config.subnet_ids_per_region[offer.region];
    if (!subnetId)
      throw new BackendError(
        `The oci backend has no subnet in ${offer.region}; re-create the backend to set it up`,
      );
    try {
      const domain = await this.#launchDomain(offer);
      const imageId = await dstackImageId(region.marketplace, offer.instance, compartmentId);
      const { subnet } = await region.network.getSubnet({ subnetId });
      const securityGroupId = await prepareSecurityGroup(
        region,
        `dstack-${config.project_name}-default-security-group`,
        subnet.vcnId,
        compartmentId,
      );
      const spot = offer.instance.resources.spot;
      // Another offer tried for the same instance is another request, with another token.
      const retryKey = `${config.instance_id}/${offer.region}/${offer.instance.name}/${spot}`;
      const userData = buildVmUserData(config);
      const { instance } = await region.compute.launchInstance({
        opcRetryToken: createHash('sha256').update(retryKey).digest('hex').slice(0, 64),
        launchInstanceDetails: {
          availabilityDomain: domain,
          compartmentId,
          createVnicDetails: { subnetId, nsgIds: [securityGroupId] },
          // The same name for the same launch, so a retried launch is the same request (its retry token's).
          displayName: generateUniqueBackendName(config.project_name, config.instance_name, {
            seed: retryKey,
          }),
          instanceOptions: { areLegacyImdsEndpointsDisabled: true },
          metadata: { user_data: Buffer.from(userData, 'utf8').toString('base64') },
          ...(spot
            ? {
                preemptibleInstanceConfig: {
                  preemptionAction: { type: 'TERMINATE', preserveBootVolume: false } as never,
                },
              }
            : {}),
          shape: offer.instance.name,
          sourceDetails: {
            sourceType: 'image',
            imageId,
            bootVolumeSizeInGBs: Math.round(offer.instance.resources.disk.size_mib / 1024),
          } as never,
        },
      });
      return {
        backend: OCI_BACKEND_TYPE,
        instance_type: offer.instance,
        instance_id: instance.id,
        hostname: null,
        internal_ip: null,
        public_ip_enabled: true,
        region: offer.region,
        availability_zone: domain,
        price: offer.price,
        username: 'ubuntu',
        ssh_port: 22,
        dockerized: true,
        backend_data: null,
      };
    } catch (error) {
      if (isCapacityError(error))
        throw new NoCapacityError(ociErrorOf(error)?.message ?? String(error), { cause: error });
      throw typedOciError(error);
    }
  }

  /** Terminates the instance with its boot volume; an instance that is not there is no error. */
  async terminateInstance(instanceId: string, region: string, _backendData?: string | null): Promise<void> {
    try {
      await this.#clients.region(region).compute.terminateInstance({
        instanceId,
        preserveBootVolume: false,
        preserveDataVolumesCreatedAtLaunch: false,
      });
    } catch (error) {
      if (ociErrorOf(error)?.status === 404) return;
      throw typedOciError(error);
    }
  }

  /** The contract's `instanceStatus`: a terminated preemptible instance was preempted. */
  async instanceStatus(provisioningData: JobProvisioningData): Promise<InstanceStatusAtProvider> {
    const state = await this.#instanceState(provisioningData);
    if (state === undefined || state === 'TERMINATED' || state === 'TERMINATING') {
      return provisioningData.instance_type.resources.spot ? 'interrupted' : 'gone';
    }
    return 'running';
  }

  async #instanceState(provisioningData: JobProvisioningData): Promise<string | undefined> {
    try {
      const { instance } = await this.#clients
        .region(provisioningData.region)
        .compute.getInstance({ instanceId: provisioningData.instance_id });
      return String(instance.lifecycleState);
    } catch (error) {
      if (ociErrorOf(error)?.status === 404) return undefined;
      throw typedOciError(error);
    }
  }

  /** The instance's VNIC addresses once attached, as dstack's `get_instance_vnic`; a terminated instance fails provisioning. */
  async updateProvisioningData(provisioningData: JobProvisioningData): Promise<JobProvisioningData> {
    try {
      const state = await this.#instanceState(provisioningData);
      if (state === undefined || state === 'TERMINATED' || state === 'TERMINATING') {
        throw new ProvisioningError(`Instance ${provisioningData.instance_id} is ${state ?? 'gone'}`);
      }
      const region = this.#clients.region(provisioningData.region);
      const attachments = await listAll((page) =>
        region.compute.listVnicAttachments({
          compartmentId: this.#compartmentId,
          instanceId: provisioningData.instance_id,
          page,
        }),
      );
      const vnicId = attachments.find((each) => each.vnicId)?.vnicId;
      if (!vnicId) return provisioningData;
      const { vnic } = await region.network.getVnic({ vnicId });
      if (!vnic.publicIp) return provisioningData;
      return { ...provisioningData, hostname: vnic.publicIp, internal_ip: vnic.privateIp ?? null };
    } catch (error) {
      const typed = typedOciError(error);
      if (typed instanceof BackendRateLimitError) return provisioningData;
      throw typed;
    }
  }
}

/** The oci backend's Compute, for use without a server (tests, scripts). */
export function createOciBackend(settings: OciBackendSettings): OciCompute {
  return new OciCompute(settings);
}
