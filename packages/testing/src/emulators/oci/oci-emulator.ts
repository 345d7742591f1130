/**
 * The OCI emulator: one loopback HTTP server that answers OCI's signed REST APIs as the OCI SDK
 * for TypeScript (`oci-core`, `oci-identity`, `oci-marketplace`) calls them, each service under
 * `/<service>/<region>/<api version>` (`/iaas/us-ashburn-1/20160918/instances`,
 * `/identity/…/20160918/…`, `/marketplace/…/20181001/…`): a client's endpoint is
 * `<url>/<service>/<region>`, where OCI's is `https://<service>.<region>.oraclecloud.com`. Every
 * call's draft-cavage signature is verified against the API key's public key (401
 * NotAuthenticated otherwise, as OCI). The public Cost Estimator documents the catalog collector
 * reads are served, unsigned, under `/cloudestimator2/data/`.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { BackendEmulator } from '../../conformance/test-backend-options.js';
import { EmulatorHttpError, json } from '../../emulator/emulator-responses.js';
import {
  type EmulatorRoute,
  type EmulatorServer,
  startEmulatorServer,
} from '../../emulator/emulator-server.js';
import type { EmulatedHosts } from '../emulated-hosts.js';
import { emulatorControlRoutes } from '../emulator-control-routes.js';
import { OciEmulatorData, type OciRegion, type OciShape } from './oci-emulator-data.js';
import {
  type ActiveOciFault,
  OciEmulatorFaults,
  type OciFault,
  parseOciFault,
} from './oci-emulator-faults.js';
import { identityRoutes } from './oci-identity.js';
import {
  BOOT_VOLUME,
  DEFAULT_OCI_EMULATOR_TIMELINE,
  INSTANCE,
  type OciEmulatorTimeline,
  ociCompute,
} from './oci-instances.js';
import { marketplaceListings, marketplaceRoutes } from './oci-marketplace.js';
import { NSG, networkRoutes, SUBNET, VCN, VNIC } from './oci-network.js';
import { OciApiError, OciResources } from './oci-resources.js';
import type { OciServiceRoute } from './oci-service-route.js';
import { type OciApiKey, OciSignatureVerifier, publicKeyFingerprint } from './oci-signature.js';

export interface OciEmulatorOptions {
  /** Default 0 (a free port). */
  port?: number;
  /** The machines instances boot; without, instances get made-up addresses (fast API tests). */
  hosts?: EmulatedHosts;
  shapes?: readonly OciShape[];
  regions?: readonly OciRegion[];
  timeline?: Partial<OciEmulatorTimeline>;
  faults?: readonly OciFault[];
  /** Where host failures are reported. Default `console.error`. */
  onHostError?: (instanceId: string, error: unknown) => void;
}

/** The tenancy's user and API key, as an OCI config file's profile names them. */
export interface OciEmulatorUser {
  readonly tenancy: string;
  readonly user: string;
  readonly fingerprint: string;
  /** PEM (PKCS#8), unencrypted. */
  readonly privateKey: string;
  readonly publicKey: string;
  /** The home region. */
  readonly region: string;
}

export interface OciEmulatorInstanceState {
  readonly id: string;
  readonly displayName: string;
  readonly region: string;
  readonly shape: string;
  readonly preemptible: boolean;
  /** PROVISIONING, RUNNING, TERMINATING, TERMINATED. */
  readonly state: string;
}

export interface OciEmulatorState {
  readonly provider: 'oci';
  readonly compartments: readonly string[];
  readonly instances: readonly OciEmulatorInstanceState[];
  readonly vnics: readonly string[];
  readonly bootVolumes: readonly string[];
  readonly vcns: readonly string[];
  readonly subnets: readonly string[];
  readonly networkSecurityGroups: readonly { name: string; rules: number }[];
}

export interface OciEmulator extends BackendEmulator {
  /** `http://127.0.0.1:<port>`: the backend's `endpoint_url`. */
  readonly url: string;
  /** Where the Cost Estimator's `shapes.json` and `products.json` are. */
  readonly costEstimatorUrl: string;
  readonly server: EmulatorServer;
  readonly user: OciEmulatorUser;
  readonly data: OciEmulatorData;
  readonly regions: readonly string[];
  addFault(fault: OciFault): ActiveOciFault;
  removeFault(id: string): boolean;
  clearFaults(): void;
  faults(): readonly ActiveOciFault[];
  state(): OciEmulatorState;
  /** OCI reclaims a preemptible instance now: its host stops and it terminates with its boot volume. */
  preemptInstance(instanceId: string): void;
  close(): Promise<void>;
}

function newUser(region: string): OciEmulatorUser {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const unique = () => randomBytes(30).toString('hex').slice(0, 60);
  return {
    tenancy: `ocid1.tenancy.oc1..${unique()}`,
    user: `ocid1.user.oc1..${unique()}`,
    fingerprint: publicKeyFingerprint(publicKey),
    privateKey,
    publicKey,
    region,
  };
}

/** Services by their endpoint's first label, with the API version their paths start with. */
const SERVICES = { iaas: '20160918', identity: '20160918', marketplace: '20181001' } as const;

export async function startOciEmulator(options: OciEmulatorOptions = {}): Promise<OciEmulator> {
  const data = new OciEmulatorData(options.shapes, options.regions);
  const home = data.regions[0]?.name ?? 'us-ashburn-1';
  const user = newUser(home);
  const apiKey: OciApiKey = {
    tenancy: user.tenancy,
    user: user.user,
    fingerprint: user.fingerprint,
    publicKey: user.publicKey,
  };
  const verifier = new OciSignatureVerifier([apiKey]);
  const faults = new OciEmulatorFaults();
  for (const fault of options.faults ?? []) faults.add(fault);
  const resources = new OciResources();
  const listings = marketplaceListings(data);
  const launched: string[] = [];
  const compute = ociCompute({
    tenancyId: user.tenancy,
    resources,
    data,
    faults,
    listings,
    hosts: options.hosts,
    timeline: { ...DEFAULT_OCI_EMULATOR_TIMELINE, ...options.timeline },
    onHostError:
      options.onHostError ??
      ((id, error) => console.error(`OCI emulator: host of ${id} failed: ${String(error)}`)),
    launched,
  });
  const routesOf: Record<keyof typeof SERVICES, OciServiceRoute[]> = {
    iaas: [...compute.routes, ...networkRoutes(user.tenancy, resources)],
    identity: identityRoutes(
      { id: user.tenancy, name: 'dstack-emulated-tenancy', homeRegion: home },
      data,
      resources,
    ),
    marketplace: marketplaceRoutes(listings),
  };

  /** Signature, then throttling, then the region, then the call: the order OCI's front door checks them. */
  const serviceRoute = (service: keyof typeof SERVICES, route: OciServiceRoute): EmulatorRoute => ({
    name: `${service} ${route.method} ${route.path}`,
    method: route.method,
    path: `/${service}/:region/${SERVICES[service]}${route.path}`,
    handle: (request) => {
      const verified = faults.has('NotAuthenticated')
        ? { refused: 'the API key was deleted' }
        : verifier.verify(request);
      if ('refused' in verified) {
        throw new OciApiError(
          401,
          'NotAuthenticated',
          'The required information to complete authentication was not provided or was incorrect.',
          {
            'x-emulator-reason': verified.refused,
          },
        );
      }
      if (faults.fire('TooManyRequests'))
        throw new OciApiError(429, 'TooManyRequests', 'Too many requests for the tenancy.');
      const region = data.region(request.params.region ?? '');
      if (!region)
        throw new OciApiError(
          404,
          'NotAuthorizedOrNotFound',
          `The tenancy is not subscribed to region ${request.params.region}`,
        );
      try {
        return route.handle(request, { region });
      } catch (error) {
        if (error instanceof EmulatorHttpError) throw error;
        throw new OciApiError(
          500,
          'InternalError',
          `OCI emulator bug: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
        );
      }
    },
  });

  const names = (type: string, field = 'displayName') =>
    resources.list(type).map((each) => String(each.document[field]));
  const state = (): OciEmulatorState => ({
    provider: 'oci',
    compartments: names('compartment', 'name'),
    instances: resources.list(INSTANCE).map((each) => ({
      id: each.id,
      displayName: String(each.document.displayName),
      region: String(each.region),
      shape: String(each.document.shape),
      preemptible: each.document.preemptibleInstanceConfig != null,
      state: String(each.document.lifecycleState),
    })),
    vnics: resources.list(VNIC).map((each) => each.id),
    bootVolumes: names(BOOT_VOLUME),
    vcns: names(VCN),
    subnets: names(SUBNET),
    networkSecurityGroups: resources.list(NSG).map((each) => ({
      name: String(each.document.displayName),
      rules: Array.isArray(each.document.securityRules) ? each.document.securityRules.length : 0,
    })),
  });

  const server = await startEmulatorServer({
    port: options.port,
    routes: [
      ...emulatorControlRoutes({ state, faults, parseFault: parseOciFault }),
      {
        name: 'costestimator.shapes',
        method: 'GET',
        path: '/cloudestimator2/data/shapes.json',
        handle: () => json(data.costEstimatorShapes()),
      },
      {
        name: 'costestimator.products',
        method: 'GET',
        path: '/cloudestimator2/data/products.json',
        handle: () => json(data.costEstimatorProducts()),
      },
      ...(Object.keys(SERVICES) as (keyof typeof SERVICES)[]).flatMap((service) =>
        routesOf[service].map((route) => serviceRoute(service, route)),
      ),
    ],
  });

  const instanceOf = (id: string) => {
    const instance = resources.get(id, INSTANCE);
    if (!instance) throw new Error(`The OCI emulator has no instance ${id}`);
    return instance;
  };
  return {
    url: server.url,
    costEstimatorUrl: `${server.url}/cloudestimator2/data`,
    server,
    user,
    data,
    regions: data.regions.map((region) => region.name),
    addFault: (fault) => faults.add(fault),
    removeFault: (id) => faults.remove(id),
    clearFaults: () => faults.clear(),
    faults: () => faults.list(),
    state,
    preemptInstance: (id) => {
      const instance = instanceOf(id);
      if (instance.document.preemptibleInstanceConfig == null)
        throw new Error(`Instance ${id} is not preemptible`);
      compute.terminate(instance, false);
    },
    failNextLaunchWithNoCapacity: (count = 1) => {
      faults.add({ code: 'OutOfHostCapacity', count });
    },
    removeInstance: (id) => compute.remove(instanceOf(id)),
    launchedMachineCount: () => launched.length,
    close: () => server.close(),
  };
}
