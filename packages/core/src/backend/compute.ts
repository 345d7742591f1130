import type { MountPoint } from '../configuration/mount-point.js';
import type { BackendType } from '../models/backend-type.js';
import type { GatewayReplicaConfiguration, GatewayReplicaProvisioningData } from '../models/gateways.js';
import type { InstanceConfiguration } from '../models/instance-configuration.js';
import type { InstanceOffer, InstanceOfferWithAvailability } from '../models/instances.js';
import type { PlacementGroup, PlacementGroupProvisioningData } from '../models/placement-groups.js';
import type { Requirements } from '../models/requirements.js';
import type { JobProvisioningData } from '../models/runs.js';
import type { Volume, VolumeAttachmentData, VolumeProvisioningData } from '../models/volumes.js';

/**
 * Capabilities a backend declares in its plugin descriptor and on its Compute.
 * The server selects backends by them (dstack's `BACKENDS_WITH_*` lists), so a
 * capability must be declared, never inferred from method presence alone.
 */
export const CAPABILITIES = [
  /** `createInstance`: fleets (instances without a job). Every VM backend. */
  'create-instance',
  /** Runs with `privileged: true`. Every shim (VM) backend. */
  'privileged',
  /** Instance (host path) mounts. Every shim (VM) backend. */
  'instance-volumes',
  /** Instances in one project/region are interconnected: multinode tasks, cluster fleets. */
  'multinode',
  /** Placement groups for cluster fleets. */
  'placement-groups',
  /** Network volumes: register, create, delete, attach, detach. */
  'volumes',
  /** Gateway instances. */
  'gateways',
  /** `getOffers` honours `Requirements.reservation` and `createInstance` `InstanceConfiguration.reservation`. */
  'reservations',
] as const;
export type Capability = (typeof CAPABILITIES)[number];

/** Options of `getOffers`, for backends that slice nodes (Kubernetes, Slurm); others ignore them. */
export interface GetOffersOptions {
  /** Return offers for whole nodes as well as for slices. */
  fullOffers?: boolean;
  /** Size offers by unallocated rather than total node resources. */
  unallocatedResources?: boolean;
  /** Aborted when the caller no longer needs the answer (plan cancelled, server stopping). */
  signal?: AbortSignal;
}

/**
 * The parts of dstack's `Run` a backend reads. Structural (snake_case, as on the
 * wire) so the server's full `Run` model satisfies it.
 */
export interface RunForCompute {
  id?: string;
  project_name: string;
  /** The dstack user name. */
  user: string;
  run_spec: {
    run_name?: string | null;
    /** The user's key, authorized in containers on container backends. */
    ssh_key_pub?: string | null;
    configuration: { reservation?: string | null; [key: string]: unknown };
    /** Profile merged into the configuration; its `tags` go on cloud resources. */
    merged_profile?: { tags?: Record<string, string> | null; [key: string]: unknown } | null;
  };
}

/** The parts of dstack's `Job` a backend reads. */
export interface JobForCompute {
  job_spec: {
    /** `{run}-{job_num}-{replica_num}`; the instance name for `createInstance`. */
    job_name: string;
    job_num: number;
    replica_num?: number;
    image_name: string;
    privileged?: boolean;
    registry_auth?: { username?: string | null; password?: string | null } | null;
    requirements: Requirements;
    /**
     * Where the job mounts volumes: network volumes by name (`RunJobParams.volumes` holds the
     * one of each mount point's names in the offer's place) and instance (host) paths.
     */
    volumes?: MountPoint[] | null;
    [key: string]: unknown;
  };
}

export interface RunJobParams {
  /**
   * dstack's id of the instance the job gets (the server's `instances` row), recorded before
   * the call: the idempotency key of the launch. A second `runJob` with the same `instanceId`
   * must return the instance (or container) the first call launched, or fail, never launch
   * another, so a server that died mid-call and retries leaves no orphaned machine. Use it as
   * EC2 `ClientToken`, in the GCP instance name, as a Vast.ai label; `runJobWithCreateInstance`
   * passes it on as `InstanceConfiguration.instance_id`.
   */
  instanceId: string;
  /**
   * The instance's agent token, chosen by the server: hand it to the agent the launch starts,
   * never on its command line. VM backends pass it on as `InstanceConfiguration.agent_token`
   * (`runJobWithCreateInstance` does) and the shim gets it; container backends give it to the
   * runner they start in the container as `DSTACK_RUNNER_TOKEN`. The agent then answers only
   * requests that carry it.
   */
  agentToken: string;
  /**
   * Where a VM's bootstrap downloads the agent runtime (a tarball URL; see `buildVmUserData`), from
   * the server's setting, with its sha256 and size when the server knows them. VM backends pass
   * them on as `InstanceConfiguration.agent_download_*` (`runJobWithCreateInstance` does). Absent:
   * the npm tarball of the agent runtime package at core's version, unverified.
   */
  agentDownloadUrl?: string | null;
  agentDownloadSha256?: string | null;
  agentDownloadSize?: number | null;
  /**
   * Where a container backend's entrypoint downloads the runner's portable runtime (a `.tar.gz`,
   * see `buildContainerEntrypoint`), from the server's setting (`DSTACK_RUNNER_DOWNLOAD_URL`).
   * Absent: the published runtime package of the release (`runnerRuntimeTarballUrl()`).
   */
  runnerDownloadUrl?: string | null;
  run: RunForCompute;
  job: JobForCompute;
  /** The offer chosen from this backend's `getOffers`. */
  offer: InstanceOfferWithAvailability;
  /** The project key the server uses for SSH; authorize it on the instance/container. */
  projectSshPublicKey: string;
  projectSshPrivateKey: string;
  /** Volumes to mount; all in the offer's region (and zone, when the volume has one). */
  volumes: readonly Volume[];
  placementGroup: PlacementGroup | null;
  requirements: Requirements;
}

export interface ProjectSshKeys {
  publicKey: string;
  privateKey: string;
}

/**
 * What every backend implements. Methods are async and may be called
 * concurrently, from several server replicas; the server applies its own timeouts.
 *
 * Errors: `NoCapacityError` means "try the next offer" (capacity, quota,
 * balance); `BackendApiCallError` is a failed provider call (retryable or not);
 * `InvalidCredentialsError` means the stored credentials stopped working. Any
 * other error during provisioning also moves the server to the next offer,
 * but is logged as a bug.
 */
export interface Compute {
  /** The backend type; equal to the plugin descriptor's `type`. */
  readonly type: BackendType;
  /** The capabilities this Compute implements; equal to the plugin descriptor's list. */
  readonly capabilities: readonly Capability[];

  /**
   * Offers matching `requirements`, each with its availability, cheapest first
   * unless the backend has a better order (Vast.ai orders by score); the server
   * sorts all backends' offers by price, a backend's order only breaking ties. Typically `getCatalogOffers` plus
   * availability (quotas, zones). Should be cheap to call repeatedly: cache
   * provider answers (dstack caches 180 s). Offers that cannot be provisioned
   * now are returned with `not_available`/`no_quota`/`no_balance`, not dropped,
   * so plans can show them. Returns `[]` rather than throwing when nothing matches.
   */
  getOffers(requirements: Requirements, options?: GetOffersOptions): Promise<InstanceOfferWithAvailability[]>;

  /**
   * Starts the job's instance (VM backends: usually `runJobWithCreateInstance`)
   * or container (container backends) and returns quickly, without waiting
   * for it to boot: `hostname` and `ssh_port` may be null, to be filled later
   * by `updateProvisioningData`. Throws `NoCapacityError` (after cleaning up
   * anything half-created) when the offer cannot be provisioned; the server
   * then tries the next offer. Idempotent on `params.instanceId`: a second call with the
   * same `instanceId` must return the instance the first call launched (or fail), never
   * launch another.
   */
  runJob(params: RunJobParams): Promise<JobProvisioningData>;

  /**
   * Terminates the instance. Idempotent: must succeed when the instance is
   * already gone or was never fully created. Should return quickly; when the
   * provider needs time (e.g. to release an IP after the instance stops), throw
   * `NotYetTerminatedError` and the server calls again later (every 30 s, up to
   * 15 minutes). `backendData` is the JSON string from the provisioning data.
   */
  terminateInstance(instanceId: string, region: string, backendData?: string | null): Promise<void>;

  /**
   * Called repeatedly while the provisioning data has no `hostname`. Must not
   * wait: look the instance up once and return the provisioning data, with
   * `hostname`, `internal_ip` and `ssh_port` filled once known, unchanged
   * otherwise. The server stores what is returned. Throws `ProvisioningError`
   * when the instance will never come up (stopped, terminated, container
   * failed); the instance then fails and is not polled again. Transient errors
   * (throttling) should be swallowed and the data returned unchanged.
   */
  updateProvisioningData(
    provisioningData: JobProvisioningData,
    projectSshKeys: ProjectSshKeys,
  ): Promise<JobProvisioningData>;

  /**
   * Optional. What the provider says of an instance whose agents stopped answering:
   * `running` (still there: a network problem, keep waiting), `interrupted` (the provider took a
   * spot instance back; the job ends `interrupted_by_no_capacity`, which `retry` calls an
   * interruption) or `gone` (terminated or stopped outside dstack). Without it the server waits
   * out its unreachable limit. Transient provider errors should throw; the server asks again.
   */
  instanceStatus?(provisioningData: JobProvisioningData): Promise<InstanceStatusAtProvider>;

  /**
   * Optional. Why jobs on this backend cannot run in the image a configuration names (the
   * local backend with its process runtime), or null when they can. Without it they can, or
   * the instance decides (a VM's shim refuses an image when the VM has no Docker). When every
   * backend a run may use gives a reason, the server refuses `image` at plan time. A backend that
   * gives one runs its jobs as processes: the server gives them the user's commands without the
   * set-up of dstack's base image.
   */
  imageRefusal?(): string | null;

  /**
   * Optional. Why jobs on this backend cannot mount volumes (network or instance paths) at a
   * path, or null when they can (the local backend with its process runtime has no container to
   * mount them in). When every backend a run with `volumes` may use gives a reason, the server
   * refuses `volumes` at plan time; otherwise such backends are left out of its placement.
   */
  volumeMountRefusal?(): string | null;
}

/** See `Compute.instanceStatus`. */
export type InstanceStatusAtProvider = 'running' | 'interrupted' | 'gone';

/** Capability `create-instance`: instances without a job (fleets). */
export interface ComputeWithCreateInstance extends Compute {
  /**
   * Launches an instance for `offer` and returns quickly with partial
   * provisioning data (`hostname` null until `updateProvisioningData` fills it).
   * Use `generateUniqueBackendName` for the cloud name, authorize
   * `config.ssh_keys`, start the shim (cloud-init), honour `offer.availability_zones`
   * (try each zone; `NoCapacityError` when all fail), `config.reservation`
   * (with `reservations`) and `placementGroup` (with `placement-groups`).
   *
   * Idempotent on `config.instance_id`, dstack's id of the instance: a second call with the
   * same `instance_id` must return the instance the first call launched (or fail), never
   * launch another; the server retries a launch whose result it never stored (it died
   * mid-call). Use it as EC2 `ClientToken`, in the GCP instance name (names are unique per
   * zone), as a Vast.ai label.
   */
  createInstance(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
    placementGroup: PlacementGroup | null,
  ): Promise<JobProvisioningData>;
}

/** Capability `privileged` (marker): runs may use `privileged: true`. */
export interface ComputeWithPrivileged extends Compute {}
/** Capability `instance-volumes` (marker): instance (host path) mounts. */
export interface ComputeWithInstanceVolumes extends Compute {}
/** Capability `multinode` (marker): instances of a project/region are interconnected. */
export interface ComputeWithMultinode extends Compute {}
/** Capability `reservations`: offers and instances honour reservations. */
export interface ComputeWithReservations extends Compute {
  /**
   * Optional. Why `reservation` gives this backend no offers now (no reservation of the backend's
   * regions by that name, or one that is not active or is full), or null when it can take an
   * instance. The server shows it where a plan (or a job) has no offers for a run with
   * `reservation`; `getOffers` still decides which offers there are.
   */
  reservationUnusableReason?(reservation: string): Promise<string | null>;
}

/** Capability `placement-groups`. */
export interface ComputeWithPlacementGroups extends Compute {
  /**
   * Creates the placement group. `masterOffer` is the first offer the server
   * will try to place in it (some clouds tie a group to an instance family).
   */
  createPlacementGroup(
    placementGroup: PlacementGroup,
    masterOffer: InstanceOffer,
  ): Promise<PlacementGroupProvisioningData>;
  /** Deletes the placement group; succeeds when it does not exist. */
  deletePlacementGroup(placementGroup: PlacementGroup): Promise<void>;
  /** Whether `offer` can be provisioned in the group. Synchronous: no API calls. */
  isSuitablePlacementGroup(placementGroup: PlacementGroup, offer: InstanceOffer): boolean;
  /** Whether placement groups can hold reserved instances; default true when absent. */
  arePlacementGroupsCompatibleWithReservations?(backendType: BackendType): boolean;
}

/**
 * Capability `volumes` (dstack's `ComputeWithVolumeSupport`). The server keeps a volume's state
 * (`submitted` → `provisioning` → `active`, or `failed`): its pipeline calls `registerVolume` or
 * `createVolume`, attaches a volume when a job that mounts it starts on an instance and detaches
 * it when the job ends (however it ends), and deletes it on `volumes/delete` or after its
 * `auto_cleanup_duration`. Errors: a `BackendError` (or any error) fails the volume with its
 * message; `attachVolume` failing ends the job `volume_error`.
 */
export interface ComputeWithVolumes extends Compute {
  /** Looks up an existing volume (`configuration.volume_id`); throws when it does not exist. */
  registerVolume(volume: Volume): Promise<VolumeProvisioningData>;
  /**
   * Creates a volume of `configuration.size` GB in `configuration.region` (and
   * `configuration.availability_zone` when set). Idempotent on `volume.id`, dstack's id of the
   * volume: a second call with the same id must return the volume the first call created (EBS
   * `ClientToken`, a GCP disk named from it), since the server calls again when it never stored
   * the first answer (it died mid-call).
   */
  createVolume(volume: Volume): Promise<VolumeProvisioningData>;
  /** Deletes the volume; succeeds when it is already gone. */
  deleteVolume(volume: Volume): Promise<void>;
  /**
   * Attaches the volume to the instance. Needed when `createVolume` may return
   * `attachable: true`; otherwise `runJob` attaches volumes itself.
   * Throws `BackendError` when the volume is not found.
   */
  attachVolume?(volume: Volume, provisioningData: JobProvisioningData): Promise<VolumeAttachmentData>;
  /** Detaches the volume; with `force`, even if in use. Needed when volumes may be `detachable`. */
  detachVolume?(
    volume: Volume,
    provisioningData: JobProvisioningData,
    options?: { force?: boolean },
  ): Promise<void>;
  /** Whether a detach finished; the server forces a detach when it stays false. Default true when absent. */
  isVolumeDetached?(volume: Volume, provisioningData: JobProvisioningData): Promise<boolean>;
  /**
   * Whether the volume may be attached to several instances at once (EBS io1/io2 Multi-Attach, a
   * directory on one host). Synchronous: no API calls. Default false when absent: the server
   * attaches the volume to one instance at a time and ends a job that needs it while it is
   * attached elsewhere with `volume_error`, naming the run that holds it.
   */
  allowsMultiAttach?(volume: Volume): boolean;
  /**
   * Where the volume of provider id `volumeId` lives, when the backend's storage is shared by
   * every project of the server (the local backend's directories on the server's host): an
   * absolute, comparable name (a path). The server lets one project hold a location: another
   * project's registration of it (`volume_id`) is refused. Synchronous: no API calls; throws
   * when `volumeId` cannot name a volume of the backend. Absent: volumes live in the project's
   * own provider account, which only the project's credentials reach.
   */
  volumeLocation?(volumeId: string): string;
}

/** Capability `gateways`. */
export interface ComputeWithGateways extends Compute {
  /** Launches a gateway instance (its user data: `buildGatewayUserData`) and returns it running, with its address. */
  createGatewayReplica(configuration: GatewayReplicaConfiguration): Promise<GatewayReplicaProvisioningData>;
  /** Terminates the gateway instance (and any load balancer); idempotent. */
  terminateGatewayReplica(
    instanceId: string,
    configuration: GatewayReplicaConfiguration,
    backendData?: string | null,
  ): Promise<void>;
}

/** The Compute interface each capability adds. */
export interface ComputeByCapability {
  'create-instance': ComputeWithCreateInstance;
  privileged: ComputeWithPrivileged;
  'instance-volumes': ComputeWithInstanceVolumes;
  multinode: ComputeWithMultinode;
  'placement-groups': ComputeWithPlacementGroups;
  volumes: ComputeWithVolumes;
  gateways: ComputeWithGateways;
  reservations: ComputeWithReservations;
}

/** The methods each capability requires (the optional ones are not listed). */
export const CAPABILITY_METHODS: { readonly [C in Capability]: readonly string[] } = {
  'create-instance': ['createInstance'],
  privileged: [],
  'instance-volumes': [],
  multinode: [],
  'placement-groups': ['createPlacementGroup', 'deletePlacementGroup', 'isSuitablePlacementGroup'],
  volumes: ['registerVolume', 'createVolume', 'deleteVolume'],
  gateways: ['createGatewayReplica', 'terminateGatewayReplica'],
  reservations: [],
};

/** The methods every Compute has. */
export const COMPUTE_METHODS = [
  'getOffers',
  'runJob',
  'terminateInstance',
  'updateProvisioningData',
] as const;
