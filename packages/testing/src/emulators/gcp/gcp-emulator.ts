/**
 * The GCP emulator: one loopback server that answers the OAuth token endpoint (`POST /token`),
 * Compute Engine v1 REST (`/compute/v1/projects/{project}/…`) and the Cloud Billing Catalog
 * (`/v1/services/{service}/skus`) as Google's client libraries expect, so a backend's real JWT
 * signing, token exchange and REST calls run unchanged against it: the service-account JSON's
 * `token_uri` is `<url>/token` and the Compute base URL `<url>/compute/v1`.
 */
import type { BackendEmulator } from '../../conformance/test-backend-options.js';
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import { EmulatorHttpError, json } from '../../emulator/emulator-responses.js';
import {
  type EmulatorRequest,
  type EmulatorServer,
  startEmulatorServer,
} from '../../emulator/emulator-server.js';
import type { EmulatedHosts } from '../emulated-hosts.js';
import { controlError, emulatorControlRoutes } from '../emulator-control-routes.js';
import { GcpApiError } from './gcp-api-error.js';
import { type BillingSku, buildBillingSkus, listSkus } from './gcp-billing-catalog.js';
import { computeRoutes } from './gcp-compute-api.js';
import { type GcpDiskState, GcpDisks } from './gcp-compute-disks.js';
import {
  DEFAULT_GCP_EMULATOR_TIMELINE,
  type GcpEmulatorTimeline,
  type GcpInstance,
  type GcpInstanceStatus,
  GcpInstances,
} from './gcp-compute-instances.js';
import { DEFAULT_GCP_IMAGES, type GcpComputeProject, type GcpImage } from './gcp-compute-project.js';
import { DEFAULT_GCP_EMULATOR_REGIONS, GcpEmulatorData } from './gcp-emulator-data.js';
import {
  type ActiveGcpFault,
  GcpEmulatorFaults,
  type GcpFault,
  type GcpProvisioningModel,
  parseGcpFault,
} from './gcp-emulator-faults.js';
import {
  createServiceAccount,
  GcpOAuth,
  type GcpServiceAccount,
  type ServiceAccountJson,
  serviceAccountJson,
  TOKEN_PATH,
} from './gcp-oauth.js';
import {
  type GcpReservation,
  type GcpReservationSpec,
  type GcpReservationStatus,
  GcpReservations,
} from './gcp-reservations.js';
import { GcpResourcePolicies, type GcpResourcePolicyState } from './gcp-resource-policies.js';

export const DEFAULT_GCP_EMULATOR_PROJECT = 'dstack-emulator';

export interface GcpEmulatorOptions {
  /** Address to listen on. Default `127.0.0.1`. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
  /** The machines instances boot; without, instances get made-up addresses (fast API tests). */
  hosts?: EmulatedHosts;
  /** The project id. Default `DEFAULT_GCP_EMULATOR_PROJECT`. */
  project?: string;
  /** Regions the project has; each must be in the emulator's data. Default `DEFAULT_GCP_EMULATOR_REGIONS`. */
  regions?: readonly string[];
  /** Steps of an instance's and an operation's life; missing fields keep `DEFAULT_GCP_EMULATOR_TIMELINE`. */
  timeline?: Partial<GcpEmulatorTimeline>;
  /** The emulator's clock in ms (a test's manual clock). Default `Date.now`. */
  clock?: () => number;
  /** Quota limits by metric in every region (e.g. `{NVIDIA_T4_GPUS: 0}`); others are 64 GPUs, 1000 CPUs. */
  quotas?: Readonly<Record<string, number>>;
  /** Images. Default `DEFAULT_GCP_IMAGES`. */
  images?: readonly GcpImage[];
  /** Faults active from the start. */
  faults?: readonly GcpFault[];
  /** The Billing Catalog's Compute Engine SKUs (recorded ones). Default: derived from the machine data. */
  billingSkus?: readonly BillingSku[];
  /** Where host failures are reported. Default `console.error`. */
  onHostError?: (instanceName: string, error: unknown) => void;
}

/** One instance as `GET /_emulator/state` lists it: `id` is its name, `state` its GCP status. */
export interface GcpEmulatorInstanceState {
  readonly id: string;
  readonly type: string;
  readonly zone: string;
  readonly market: GcpProvisioningModel;
  readonly state: GcpInstanceStatus;
}

export interface GcpEmulatorState {
  readonly instances: readonly GcpEmulatorInstanceState[];
  /** Resource policies (compact placements) with the instances in them. */
  readonly resourcePolicies: readonly GcpResourcePolicyState[];
  /** Persistent disks with what they are attached to. */
  readonly disks: readonly GcpDiskState[];
  readonly reservations: readonly GcpEmulatorReservationState[];
}

/** A zonal reservation as `GET /_emulator/state` lists it, with the instances that consume it. */
export interface GcpEmulatorReservationState {
  readonly name: string;
  readonly zone: string;
  readonly machineType: string;
  readonly status: GcpReservationStatus;
  readonly count: number;
  readonly instances: readonly string[];
}

/** Also a `BackendEmulator`, so `testBackend()` drives it directly. */
export interface GcpEmulator extends BackendEmulator {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** `<url>/compute/v1`: the Compute base URL (`endpoint_url`). */
  readonly computeUrl: string;
  /** `<url>/token`: the service account's `token_uri`. */
  readonly tokenUrl: string;
  readonly server: EmulatorServer;
  readonly project: string;
  readonly regions: readonly string[];
  readonly data: GcpEmulatorData;
  /** The project's service account, whose key the emulator knows. */
  readonly serviceAccount: GcpServiceAccount;
  /** Its key file, `token_uri` at the emulator. */
  serviceAccountJson(): ServiceAccountJson;
  /** The Billing Catalog's Compute Engine SKUs. */
  readonly skus: readonly BillingSku[];
  addFault(fault: GcpFault): ActiveGcpFault;
  removeFault(id: string): boolean;
  clearFaults(): void;
  faults(): readonly ActiveGcpFault[];
  /** Preempts a spot instance now (STOPPING → TERMINATED, host gone, a preempted operation). */
  preemptInstance(name: string): void;
  /** Makes a zonal reservation as if the project had created it (READY unless told). */
  addReservation(spec: GcpReservationSpec): GcpEmulatorReservationState;
  /** Moves a reservation to another status. */
  setReservationStatus(zone: string, name: string, status: GcpReservationStatus): GcpEmulatorReservationState;
  state(): GcpEmulatorState;
  /** The next `count` inserts fail with ZONE_RESOURCE_POOL_EXHAUSTED in their operation. Default 1. */
  failNextLaunchWithNoCapacity(count?: number): void;
  /** Deletes an instance (by name) behind the backend's back: its host stops, the API 404s. */
  removeInstance(name: string): void;
  /** The id the instance's emulated host has (GCP's numeric instance id): what `EmulatedHosts` calls take. */
  hostIdOf(name: string): string;
  /** Instances inserted so far, failed and deleted ones included. */
  launchedMachineCount(): number;
  /**
   * Stops the server and takes attached disks off the hosts (their loop devices freed, their
   * backing files removed); the hosts belong to the caller: close them yourself.
   */
  close(): Promise<void>;
}

/** Answers an emulator bug as Google's 500 naming it, so the client reports it instead of failing to parse. */
function asGoogleApi(handler: (request: EmulatorRequest) => EmulatorResponse) {
  return (request: EmulatorRequest): EmulatorResponse => {
    try {
      return handler(request);
    } catch (error) {
      if (error instanceof EmulatorHttpError) throw error;
      const message = `GCP emulator bug: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`;
      return new GcpApiError(500, 'backendError', message).response;
    }
  };
}

export async function startGcpEmulator(options: GcpEmulatorOptions = {}): Promise<GcpEmulator> {
  const project = options.project ?? DEFAULT_GCP_EMULATOR_PROJECT;
  const data = new GcpEmulatorData(options.regions ?? DEFAULT_GCP_EMULATOR_REGIONS);
  const clock = options.clock ?? Date.now;
  const faults = new GcpEmulatorFaults();
  for (const fault of options.faults ?? []) faults.add(fault);
  const serviceAccount = createServiceAccount(project);
  const timeline = { ...DEFAULT_GCP_EMULATOR_TIMELINE, ...options.timeline };
  const onHostError =
    options.onHostError ??
    ((name: string, error: unknown) =>
      console.error(`GCP emulator: host of ${name} failed: ${String(error)}`));
  const instances = new GcpInstances({ clock, timeline, hosts: options.hosts, onHostError });
  const disks = new GcpDisks({
    project,
    instances,
    hosts: options.hosts,
    clock,
    operationMs: timeline.operationPendingMs,
    onHostError,
  });
  const resourcePolicies = new GcpResourcePolicies(project, data.regions, instances, clock);
  const reservations = new GcpReservations(project, data, instances, clock);
  const compute: GcpComputeProject = {
    project,
    data,
    instances,
    disks,
    resourcePolicies,
    reservations,
    faults,
    images: options.images ?? DEFAULT_GCP_IMAGES,
    quotas: options.quotas ?? {},
    clock,
    firewalls: new Map(),
    requestIds: new Map(),
    globalOperations: new Map(),
  };
  const skus = options.billingSkus ?? buildBillingSkus(data);
  let baseUrl = '';
  const oauth = new GcpOAuth({
    accounts: [serviceAccount],
    clock,
    keysRevoked: () => faults.has('INVALID_GRANT') !== undefined,
    tokenUrl: () => `${baseUrl}${TOKEN_PATH}`,
  });

  /** Bearer token, then the rate limit, then the handler: the order Google's front end checks them. */
  const authorized =
    (handler: (request: EmulatorRequest) => EmulatorResponse) =>
    (request: EmulatorRequest): EmulatorResponse => {
      oauth.authenticate(request);
      if (faults.fire('RATE_LIMIT_EXCEEDED')) {
        throw new GcpApiError(
          429,
          'rateLimitExceeded',
          "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'compute.googleapis.com' for consumer 'project_number:918273645546'.",
          'usageLimits',
        );
      }
      return asGoogleApi(handler)(request);
    };

  function findInstance(name: string): GcpInstance {
    const instance = instances
      .all()
      .find((each) => each.name === name && instances.status(each) !== undefined);
    if (!instance) throw new Error(`The GCP emulator has no instance ${name}`);
    return instance;
  }

  const reservationState = (reservation: GcpReservation): GcpEmulatorReservationState => ({
    name: reservation.name,
    zone: reservation.zone,
    machineType: reservation.machineType,
    status: reservation.status,
    count: reservation.count,
    instances: reservations.instancesOf(reservation).map((instance) => instance.name),
  });

  const state = (): GcpEmulatorState => ({
    instances: instances.all().flatMap((instance) => {
      const status = instances.status(instance);
      return status === undefined
        ? []
        : [
            {
              id: instance.name,
              type: instance.machineType,
              zone: instance.zone,
              market: instance.provisioningModel,
              state: status,
            },
          ];
    }),
    resourcePolicies: resourcePolicies.state(),
    disks: disks.state(),
    reservations: reservations.all().map(reservationState),
  });

  const server = await startEmulatorServer({
    host: options.host,
    port: options.port,
    routes: [
      ...emulatorControlRoutes({ state, faults, parseFault: parseGcpFault }),
      {
        name: 'instances.preempt',
        method: 'POST',
        path: '/_emulator/instances/:name/preempt',
        handle: (request) => {
          try {
            const instance = findInstance(request.params.name ?? '');
            instances.preempt(instance);
            return json({ id: instance.name, state: instances.status(instance) });
          } catch (error) {
            throw controlError(error);
          }
        },
      },
      {
        name: 'reservations.add',
        method: 'POST',
        path: '/_emulator/reservations',
        handle: (request) => {
          try {
            return json(reservationState(reservations.add(request.body as GcpReservationSpec)), 201);
          } catch (error) {
            throw controlError(error);
          }
        },
      },
      { name: 'oauth.token', method: 'POST', path: TOKEN_PATH, handle: (request) => oauth.exchange(request) },
      ...computeRoutes(compute, authorized),
      {
        name: 'billing.skus',
        method: 'GET',
        path: '/v1/services/:service/skus',
        handle: authorized((request) => json(listSkus(skus, request))),
      },
    ],
  });
  baseUrl = server.url;

  return {
    url: server.url,
    computeUrl: `${server.url}/compute/v1`,
    tokenUrl: `${server.url}${TOKEN_PATH}`,
    server,
    project,
    regions: data.regions,
    data,
    serviceAccount,
    serviceAccountJson: () => serviceAccountJson(serviceAccount, project, server.url),
    skus,
    addFault: (fault) => faults.add(fault),
    removeFault: (id) => faults.remove(id),
    clearFaults: () => faults.clear(),
    faults: () => faults.list(),
    preemptInstance: (name) => instances.preempt(findInstance(name)),
    addReservation: (spec) => reservationState(reservations.add(spec)),
    setReservationStatus: (zone, name, status) =>
      reservationState(reservations.setStatus(zone, name, status)),
    state,
    failNextLaunchWithNoCapacity: (count = 1) => {
      faults.add({ code: 'ZONE_RESOURCE_POOL_EXHAUSTED', count });
    },
    removeInstance: (name) => instances.forget(findInstance(name)),
    hostIdOf: (name) => findInstance(name).id,
    launchedMachineCount: () => instances.all().length,
    async close() {
      instances.close();
      await server.close();
      await disks.close();
    },
  };
}
