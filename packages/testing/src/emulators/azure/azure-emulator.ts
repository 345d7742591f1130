/**
 * The Azure emulator: one loopback HTTPS server that answers Microsoft Entra ID's token endpoint
 * (`/{tenant}/oauth2/v2.0/token`, with the tenant's OpenID metadata) and Resource Manager
 * (`/subscriptions/{subscriptionId}/…`), so Azure's own SDKs (`@azure/identity`'s
 * `ClientSecretCredential`, `@azure/arm-*` clients) run unchanged against it: the credential's
 * `authorityHost` and the clients' `endpoint` are its URL, and they trust its self-signed
 * certificate (Azure's SDKs send credentials only over TLS).
 */
import { randomUUID } from 'node:crypto';
import type { BackendEmulator } from '../../conformance/test-backend-options.js';
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import { EmulatorHttpError } from '../../emulator/emulator-responses.js';
import {
  type EmulatorRequest,
  type EmulatorServer,
  startEmulatorServer,
} from '../../emulator/emulator-server.js';
import { selfSignedCertificate } from '../../emulator/self-signed-certificate.js';
import type { EmulatedHosts } from '../emulated-hosts.js';
import { emulatorControlRoutes } from '../emulator-control-routes.js';
import {
  AzureActiveDirectory,
  type AzureServicePrincipal,
  createServicePrincipal,
} from './azure-active-directory.js';
import { AzureArmError } from './azure-arm-error.js';
import { AzureEmulatorData, type AzureRegion, type AzureVmSize } from './azure-emulator-data.js';
import {
  type ActiveAzureFault,
  AzureEmulatorFaults,
  type AzureFault,
  parseAzureFault,
} from './azure-emulator-faults.js';
import { AzureResourceManager } from './azure-resource-manager.js';
import { AzureResources } from './azure-resources.js';
import { AZURE_RETAIL_PRICES_PAGE_SIZE, answerRetailPrices } from './azure-retail-prices.js';
import {
  type AzureEmulatorTimeline,
  DEFAULT_AZURE_EMULATOR_TIMELINE,
  DISK_TYPE,
  evictVirtualMachine,
  NIC_TYPE,
  PUBLIC_IP_TYPE,
  putUserAssignedIdentity,
  stopVmHost,
  VM_TYPE,
} from './azure-virtual-machines.js';

export interface AzureEmulatorOptions {
  /** Default 0 (a free port). */
  port?: number;
  /** The machines VMs boot; without, VMs get made-up addresses (fast API tests). */
  hosts?: EmulatedHosts;
  /** Default: a random UUID. */
  subscriptionId?: string;
  /** Default: a random UUID. */
  tenantId?: string;
  sizes?: readonly AzureVmSize[];
  regions?: readonly AzureRegion[];
  timeline?: Partial<AzureEmulatorTimeline>;
  faults?: readonly AzureFault[];
  /** Where host failures are reported. Default `console.error`. */
  onHostError?: (vmName: string, error: unknown) => void;
  /** Meters per page of the Retail Prices API. Default 1000 (Azure's). */
  retailPricesPageSize?: number;
}

/** One resource as `GET /_emulator/state` lists it. */
export interface AzureEmulatorResourceState {
  readonly name: string;
  readonly resourceGroup: string;
  readonly location: string;
}

export interface AzureEmulatorVmState extends AzureEmulatorResourceState {
  readonly vmSize: string;
  readonly priority: 'Spot' | 'Regular';
  /** Compute's provisioningState: `Creating`, `Succeeded`, `Failed`, `Deleting`. */
  readonly state: string;
}

export interface AzureEmulatorState {
  readonly resourceGroups: readonly string[];
  readonly virtualMachines: readonly AzureEmulatorVmState[];
  readonly disks: readonly AzureEmulatorResourceState[];
  readonly networkInterfaces: readonly AzureEmulatorResourceState[];
  readonly publicIpAddresses: readonly AzureEmulatorResourceState[];
}

export interface AzureEmulator extends BackendEmulator {
  /** `https://127.0.0.1:<port>`: Resource Manager's endpoint and the credential's authority host. */
  readonly url: string;
  /** `{url}/api/retail/prices`: the Retail Prices API of the model's sizes (no authentication, as Azure's). */
  readonly retailPricesUrl: string;
  /** The certificate (PEM) clients trust for `url`. */
  readonly certificate: string;
  readonly server: EmulatorServer;
  readonly subscriptionId: string;
  readonly tenantId: string;
  /** The tenant's service principal, whose secret the token endpoint accepts. */
  readonly servicePrincipal: AzureServicePrincipal;
  readonly data: AzureEmulatorData;
  /** The regions' names. */
  readonly regions: readonly string[];
  addFault(fault: AzureFault): ActiveAzureFault;
  removeFault(id: string): boolean;
  clearFaults(): void;
  faults(): readonly ActiveAzureFault[];
  state(): AzureEmulatorState;
  /** Azure evicts a spot VM now: with `evictionPolicy: Delete` it goes with its resources (their deleteOption), its host stopped. */
  evictSpotVm(name: string): void;
  /**
   * A user-assigned managed identity made in the subscription (as `az identity create` does; its
   * resource group is made when missing). Returns its resource id.
   */
  createManagedIdentity(resourceGroup: string, name: string, location: string): string;
  /** The id the VM's emulated host has (its `vmId`): what `EmulatedHosts` calls take. */
  hostIdOf(vmName: string): string;
  close(): Promise<void>;
}

export async function startAzureEmulator(options: AzureEmulatorOptions = {}): Promise<AzureEmulator> {
  const subscriptionId = options.subscriptionId ?? randomUUID();
  const servicePrincipal = createServicePrincipal(options.tenantId);
  const data = new AzureEmulatorData(options.sizes, options.regions);
  const clock = Date.now;
  const faults = new AzureEmulatorFaults();
  for (const fault of options.faults ?? []) faults.add(fault);
  const resources = new AzureResources(subscriptionId, clock);
  const launched: string[] = [];
  const directory = new AzureActiveDirectory({
    principals: [servicePrincipal],
    clock,
    secretsRevoked: () => faults.has('InvalidClientSecret'),
  });
  const resourceManager = new AzureResourceManager({
    resources,
    data,
    faults,
    hosts: options.hosts,
    timeline: { ...DEFAULT_AZURE_EMULATOR_TIMELINE, ...options.timeline },
    onHostError:
      options.onHostError ??
      ((name, error) => console.error(`Azure emulator: host of ${name} failed: ${String(error)}`)),
    launched,
    creations: new WeakMap(),
  });

  /** Bearer token, then throttling, then the call: the order Azure's front door checks them. */
  const armCall = (request: EmulatorRequest): EmulatorResponse => {
    if (!directory.isAuthorized(request)) {
      throw new AzureArmError(401, 'InvalidAuthenticationToken', 'The access token is invalid.', {
        'www-authenticate': `Bearer authorization_uri="${request.baseUrl}/${servicePrincipal.tenantId}", error="invalid_token", error_description="The access token is invalid."`,
      });
    }
    if (faults.fire('TooManyRequests')) {
      throw new AzureArmError(
        429,
        'TooManyRequests',
        'The request is being throttled as the limit has been reached for operation type - Read_ObservationWindow_00:05:00. For more information, refer to - https://aka.ms/armthrottling',
        { 'retry-after': '1' },
      );
    }
    try {
      return resourceManager.handle(request);
    } catch (error) {
      if (error instanceof EmulatorHttpError) throw error;
      throw new AzureArmError(
        500,
        'InternalServerError',
        `Azure emulator bug: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
    }
  };

  const listed = (type: string) =>
    resources.list(type).map((resource) => ({
      name: resource.name,
      resourceGroup: resource.resourceGroup,
      location: resource.location,
    }));
  const state = (): AzureEmulatorState => ({
    resourceGroups: resources.groups().map((group) => group.name),
    virtualMachines: resources.list(VM_TYPE).map((vm) => {
      const properties = vm.properties as {
        hardwareProfile: { vmSize: string };
        priority: 'Spot' | 'Regular';
        provisioningState: string;
      };
      return {
        name: vm.name,
        resourceGroup: vm.resourceGroup,
        location: vm.location,
        vmSize: properties.hardwareProfile.vmSize,
        priority: properties.priority,
        state: properties.provisioningState,
      };
    }),
    disks: listed(DISK_TYPE),
    networkInterfaces: listed(NIC_TYPE),
    publicIpAddresses: listed(PUBLIC_IP_TYPE),
  });

  const tls = await selfSignedCertificate('dstack-azure-emulator', ['127.0.0.1']);
  const server = await startEmulatorServer({
    port: options.port,
    tls,
    collapseLeadingSlashes: true,
    routes: [
      ...emulatorControlRoutes({ state, faults, parseFault: parseAzureFault }),
      {
        name: 'aad.openid-configuration',
        method: 'GET',
        path: '/:tenant/v2.0/.well-known/openid-configuration',
        handle: (request) => directory.openIdConfiguration(request),
      },
      {
        name: 'aad.token',
        method: 'POST',
        path: '/:tenant/oauth2/v2.0/token',
        handle: (request) => directory.token(request),
      },
      { name: 'arm', method: '*', path: '/subscriptions/*', handle: armCall },
      {
        name: 'retail-prices',
        method: 'GET',
        path: '/api/retail/prices',
        handle: (request) =>
          answerRetailPrices(request, data, options.retailPricesPageSize ?? AZURE_RETAIL_PRICES_PAGE_SIZE),
      },
    ],
  });

  const vmOf = (name: string) => {
    const vm = resources.list(VM_TYPE).find((each) => each.name === name);
    if (!vm) throw new Error(`The Azure emulator has no VM ${name}`);
    return vm;
  };
  return {
    url: server.url,
    retailPricesUrl: `${server.url}/api/retail/prices`,
    certificate: tls.certificate,
    server,
    subscriptionId,
    tenantId: servicePrincipal.tenantId,
    servicePrincipal,
    data,
    regions: data.regions.map((region) => region.name),
    addFault: (fault) => faults.add(fault),
    removeFault: (id) => faults.remove(id),
    clearFaults: () => faults.clear(),
    faults: () => faults.list(),
    state,
    hostIdOf: (name) => String(vmOf(name).properties.vmId),
    createManagedIdentity: (resourceGroup, name, location) => {
      if (!resources.group(resourceGroup)) resources.putGroup(resourceGroup, location, {});
      return putUserAssignedIdentity(resourceManager.context, resourceGroup, name, { location }).resource.id;
    },
    failNextLaunchWithNoCapacity: (count = 1) => {
      faults.add({ code: 'AllocationFailed', count });
    },
    evictSpotVm: (name) => {
      const vm = vmOf(name);
      if (vm.properties.priority !== 'Spot') throw new Error(`VM ${name} is not a spot VM`);
      evictVirtualMachine(resourceManager.context, vm);
    },
    removeInstance: (name) => {
      const vm = vmOf(name);
      resources.delete(vm.id);
      void stopVmHost(resourceManager.context, vm).catch((error: unknown) =>
        console.error(`Azure emulator: cannot stop the host of ${name}: ${String(error)}`),
      );
    },
    launchedMachineCount: () => launched.length,
    close: () => server.close(),
  };
}
