import {
  type BackendPlugin,
  type Capability,
  type ComputeKind,
  type ComputeWithCreateInstance,
  defineBackendPlugin,
  type GatewayReplicaConfiguration,
  type GatewayReplicaProvisioningData,
  generateUniqueBackendName,
  type InstanceConfiguration,
  type InstanceOffer,
  type InstanceOfferWithAvailability,
  InvalidCredentialsError,
  isAvailable,
  type JobProvisioningData,
  NoCapacityError,
  type PlacementGroup,
  type PlacementGroupProvisioningData,
  ProvisioningError,
  type Requirements,
  type RunJobParams,
  type StoredBackendRecord,
} from '@dstack/core';
import type { BackendEmulator } from '../conformance/test-backend-options.js';
import { bootLocalAgent, type LocalAgent } from '../emulator/boot-local-agent.js';
import {
  FAKE_BACKEND_TYPE,
  FAKE_BACKEND_VALID_API_KEY,
  type FakeBackendConfig,
  type FakeBackendConfigWithCreds,
  type FakeBackendConfigWithoutCreds,
  fakeBackendConfigModels,
  fakeBackendConfigModelsOf,
} from './fake-backend-config.js';
import { type FakeCapacity, fakeOffers } from './fake-offers.js';

/** The Compute methods whose calls are recorded and can be made to fail. */
export type FakeComputeMethod =
  | 'getOffers'
  | 'runJob'
  | 'createInstance'
  | 'terminateInstance'
  | 'updateProvisioningData'
  | 'createPlacementGroup'
  | 'deletePlacementGroup'
  | 'createGatewayReplica'
  | 'terminateGatewayReplica';

/** A gateway instance of the fake cloud (with the `gateways` capability). */
export interface FakeGatewayInstance {
  readonly instanceId: string;
  /** The `instance_name` it was launched for: a second launch of that name returns it. */
  readonly instanceName: string;
  readonly ipAddress: string;
  terminated: boolean;
}

/** A placement group of the fake cloud (with the `placement-groups` capability). */
export interface FakePlacementGroup {
  readonly name: string;
  readonly region: string;
  deleted: boolean;
}

/** One recorded Compute call. */
export interface FakeBackendCall {
  readonly method: FakeComputeMethod;
  readonly args: readonly unknown[];
}

/** An instance of the fake cloud. */
export interface FakeInstance {
  readonly instanceId: string;
  /** dstack's instance id the launch was keyed by (`instance_id` / `instanceId`). */
  readonly dstackInstanceId: string;
  /** The dstack-side name (job name or fleet instance name). */
  readonly name: string;
  /** The agent token the launch handed over; the booted agent requires it. */
  readonly agentToken: string;
  readonly offer: InstanceOfferWithAvailability;
  /** `running` once `updateProvisioningData` reported its hostname. */
  state: 'provisioning' | 'running' | 'terminated' | 'removed';
  /** `updateProvisioningData` calls so far. */
  polls: number;
  /** The placement group it was launched into, by name; null for none. */
  readonly placementGroup: string | null;
  /** The real agent booted for it (with `bootAgents`). */
  agent: LocalAgent | undefined;
}

export interface FakeBackendOptions {
  /** The backend type, so a project can have several fake clouds. Default `FAKE_BACKEND_TYPE` (`fake`). */
  type?: string;
  /**
   * The order `getOffers` answers in: `price` (cheapest first, as catalog backends) or
   * `price-descending` (dearest first, as a marketplace answering in its own score order may).
   * Default `price`.
   */
  offerOrder?: 'price' | 'price-descending';
  /** Instance types, regions and spot variants on offer. Default: see `FakeCapacity`. */
  capacity?: FakeCapacity;
  /** Instances that may exist at once; launches beyond it fail with `NoCapacityError`. Default unlimited. */
  instanceLimit?: number;
  /** Capabilities of the plugin and its Compute. Default `['create-instance']`. */
  capabilities?: readonly Capability[];
  /** Default `vm`: instances are hosts with a shim. `container`: the runner runs directly. */
  computeKind?: ComputeKind;
  /** The one API key `validateConfig` accepts. Default `FAKE_BACKEND_VALID_API_KEY` (`valid-key`). */
  validApiKey?: string;
  /**
   * `updateProvisioningData` calls an instance needs before its hostname is
   * known ("slow provisioning"). Default 1: the first call fills it.
   */
  provisioningPolls?: number;
  /**
   * Boot a real agent on this machine for each instance once it is running
   * (shim for `vm`, runner for `container`, see `bootLocalAgent`); the
   * provisioning data then points at it on loopback. Default false: the
   * hostname is a documentation address (192.0.2.x) nobody answers on.
   */
  bootAgents?: boolean;
}

/**
 * An in-memory cloud behind a `fake` backend plugin, with its controls: it
 * records Compute calls and injects failures. Every Compute the plugin builds
 * shares this cloud.
 */
export interface FakeBackend {
  readonly plugin: BackendPlugin;
  /** Every Compute call, oldest first. */
  readonly calls: readonly FakeBackendCall[];
  callsOf(method: FakeComputeMethod): FakeBackendCall[];
  /** Instances by id, terminated and removed ones included. */
  readonly instances: ReadonlyMap<string, FakeInstance>;
  /** Instances neither terminated nor removed. */
  liveInstances(): FakeInstance[];
  /** Placement groups by name, deleted ones included (used with the `placement-groups` capability). */
  readonly placementGroups: ReadonlyMap<string, FakePlacementGroup>;
  /** Gateway instances by id, terminated ones included (used with the `gateways` capability). */
  readonly gatewayInstances: ReadonlyMap<string, FakeGatewayInstance>;
  /**
   * How many launches (`runJob`/`createInstance`) came with dstack instance id `dstackInstanceId`,
   * failed ones included; each id launches at most one machine (see `instances`).
   */
  launchesOf(dstackInstanceId: string): number;
  /**
   * The next `count` launches record their machine and then never return, as a server that
   * died mid-call sees it (the retry gets the machine back by its dstack instance id). Default 1.
   */
  hangNextLaunch(count?: number): void;
  /** The next `count` launches (`runJob`/`createInstance`) fail with `NoCapacityError`. Default 1. */
  failNextLaunchWithNoCapacity(count?: number): void;
  /** The next `count` calls of `method` throw what `error` makes. Default 1. */
  failNext(method: FakeComputeMethod, error: () => Error, count?: number): void;
  /** The instance disappears behind the backend's back (its agent stops); polling it fails. */
  removeInstance(instanceId: string): Promise<void>;
  /** Stops every agent the fake cloud booted. */
  close(): Promise<void>;
  /** This cloud as a `testBackend` emulator (fault hooks included). */
  asEmulator(): BackendEmulator;
}

interface QueuedFailure {
  error: () => Error;
  remaining: number;
}

/** Documentation addresses (RFC 5737): fake hostnames that never route. */
const UNROUTABLE_PREFIX = '192.0.2.';

/**
 * Creates the fake cloud and its `fake` backend plugin: creds
 * `{type: api_key, api_key}`, valid only for `validApiKey`; the stored
 * `regions` default to `['fake-region-1']`, as the server's tests expect.
 */
export function createFakeBackend(options: FakeBackendOptions = {}): FakeBackend {
  const backendType = options.type ?? FAKE_BACKEND_TYPE;
  const configModels =
    backendType === FAKE_BACKEND_TYPE ? fakeBackendConfigModels : fakeBackendConfigModelsOf(backendType);
  const capabilities = options.capabilities ?? ['create-instance'];
  const computeKind = options.computeKind ?? 'vm';
  const validApiKey = options.validApiKey ?? FAKE_BACKEND_VALID_API_KEY;
  const provisioningPolls = options.provisioningPolls ?? 1;
  const capacity = options.capacity ?? {};
  const calls: FakeBackendCall[] = [];
  const instances = new Map<string, FakeInstance>();
  const failures = new Map<FakeComputeMethod, QueuedFailure[]>();
  let launchFailures = 0;
  let launchHangs = 0;
  let instanceCount = 0;
  /** The provisioning data of each launch, by the dstack instance id it was keyed by. */
  const launchesByKey = new Map<string, JobProvisioningData>();
  const launchCounts = new Map<string, number>();
  const placementGroups = new Map<string, FakePlacementGroup>();
  const gatewayInstances = new Map<string, FakeGatewayInstance>();

  const record = (method: FakeComputeMethod, args: readonly unknown[]) => {
    calls.push({ method, args });
    const queue = failures.get(method);
    const head = queue?.[0];
    if (queue && head) {
      head.remaining -= 1;
      if (head.remaining === 0) queue.shift();
      throw head.error();
    }
  };
  const liveInstances = () =>
    [...instances.values()].filter((each) => each.state === 'provisioning' || each.state === 'running');

  /** Launches once per dstack instance id: a second launch with the same id gets the first one's data. */
  const launch = async (
    offer: InstanceOfferWithAvailability,
    name: string,
    projectName: string,
    dstackInstanceId: string,
    field: 'RunJobParams.instanceId' | 'InstanceConfiguration.instance_id',
    agentToken: string,
    placementGroup: PlacementGroup | null,
  ): Promise<JobProvisioningData> => {
    if (typeof dstackInstanceId !== 'string' || dstackInstanceId === '') {
      throw new TypeError(`${field} is required: it is the launch's idempotency key`);
    }
    if (typeof agentToken !== 'string' || agentToken === '') {
      const tokenField =
        field === 'RunJobParams.instanceId' ? 'RunJobParams.agentToken' : 'InstanceConfiguration.agent_token';
      throw new TypeError(`${tokenField} is required: the instance's agent must require it`);
    }
    launchCounts.set(dstackInstanceId, (launchCounts.get(dstackInstanceId) ?? 0) + 1);
    const launched = launchesByKey.get(dstackInstanceId);
    if (launched) return { ...launched };
    if (placementGroup !== null) {
      const group = placementGroups.get(placementGroup.name);
      // As EC2 answers a launch into a group it does not have, or one in another region.
      if (!group || group.deleted)
        throw new Error(`The placement group ${placementGroup.name} does not exist`);
      if (group.region !== offer.region) {
        throw new Error(`The placement group ${group.name} is in ${group.region}, not ${offer.region}`);
      }
    }
    const data = launchMachine(
      offer,
      name,
      projectName,
      dstackInstanceId,
      agentToken,
      placementGroup?.name ?? null,
    );
    launchesByKey.set(dstackInstanceId, data);
    if (launchHangs > 0) {
      launchHangs -= 1;
      return new Promise<never>(() => {});
    }
    return { ...data };
  };

  const launchMachine = (
    offer: InstanceOfferWithAvailability,
    name: string,
    projectName: string,
    dstackInstanceId: string,
    agentToken: string,
    placementGroup: string | null,
  ) => {
    if (launchFailures > 0) {
      launchFailures -= 1;
      throw new NoCapacityError(
        `The fake cloud has no capacity for ${offer.instance.name} in ${offer.region}`,
      );
    }
    if (!isAvailable(offer.availability)) {
      throw new NoCapacityError(
        `The offer ${offer.instance.name} in ${offer.region} is ${offer.availability}`,
      );
    }
    if (options.instanceLimit !== undefined && liveInstances().length >= options.instanceLimit) {
      throw new NoCapacityError(`The fake cloud's instance limit (${options.instanceLimit}) is reached`);
    }
    instanceCount += 1;
    const instanceId = generateUniqueBackendName(projectName, name);
    const instance: FakeInstance = {
      instanceId,
      dstackInstanceId,
      name,
      agentToken,
      offer,
      state: 'provisioning',
      polls: 0,
      placementGroup,
      agent: undefined,
    };
    instances.set(instanceId, instance);
    const data: JobProvisioningData = {
      backend: backendType,
      instance_type: offer.instance,
      instance_id: instanceId,
      hostname: null,
      internal_ip: null,
      public_ip_enabled: !options.bootAgents,
      region: offer.region,
      price: offer.price,
      username: computeKind === 'vm' ? 'ubuntu' : 'root',
      ssh_port: null,
      dockerized: computeKind === 'vm',
      backend_data: JSON.stringify({ sequence: instanceCount }),
    };
    return data;
  };

  class FakeCompute implements ComputeWithCreateInstance {
    readonly type = backendType;
    readonly capabilities = capabilities;
    constructor(readonly config: FakeBackendConfig) {}

    async getOffers(requirements: Requirements): Promise<InstanceOfferWithAvailability[]> {
      record('getOffers', [requirements]);
      const offers: InstanceOfferWithAvailability[] = fakeOffers(
        backendType,
        capacity,
        requirements,
        this.config.regions,
      ).map((offer) => (computeKind === 'container' ? { ...offer, instance_runtime: 'runner' } : offer));
      return options.offerOrder === 'price-descending' ? offers.reverse() : offers;
    }

    async runJob(params: RunJobParams): Promise<JobProvisioningData> {
      record('runJob', [params]);
      return launch(
        params.offer,
        params.job.job_spec.job_name,
        params.run.project_name,
        params.instanceId,
        'RunJobParams.instanceId',
        params.agentToken,
        params.placementGroup,
      );
    }

    async createInstance(
      offer: InstanceOfferWithAvailability,
      config: InstanceConfiguration,
      placementGroup: PlacementGroup | null = null,
    ): Promise<JobProvisioningData> {
      record('createInstance', [offer, config, placementGroup]);
      return launch(
        offer,
        config.instance_name,
        config.project_name,
        config.instance_id,
        'InstanceConfiguration.instance_id',
        config.agent_token,
        placementGroup,
      );
    }

    // Gateways: used by the server only when `capabilities` has `gateways`. Addresses never route.
    async createGatewayReplica(
      configuration: GatewayReplicaConfiguration,
    ): Promise<GatewayReplicaProvisioningData> {
      record('createGatewayReplica', [configuration]);
      let gateway = [...gatewayInstances.values()].find(
        (each) => each.instanceName === configuration.instance_name && !each.terminated,
      );
      if (!gateway) {
        const sequence = gatewayInstances.size + 1;
        gateway = {
          instanceId: `fake-gateway-${sequence}`,
          instanceName: configuration.instance_name,
          ipAddress: `${UNROUTABLE_PREFIX}${200 + sequence}`,
          terminated: false,
        };
        gatewayInstances.set(gateway.instanceId, gateway);
      }
      return { instance_id: gateway.instanceId, ip_address: gateway.ipAddress, region: configuration.region };
    }

    async terminateGatewayReplica(
      instanceId: string,
      configuration: GatewayReplicaConfiguration,
      backendData?: string | null,
    ): Promise<void> {
      record('terminateGatewayReplica', [instanceId, configuration, backendData]);
      const gateway = gatewayInstances.get(instanceId);
      if (gateway) gateway.terminated = true;
    }

    // Placement groups: used by the server only when `capabilities` has `placement-groups`.
    async createPlacementGroup(
      group: PlacementGroup,
      masterOffer: InstanceOffer,
    ): Promise<PlacementGroupProvisioningData> {
      record('createPlacementGroup', [group, masterOffer]);
      placementGroups.set(group.name, {
        name: group.name,
        region: group.configuration.region,
        deleted: false,
      });
      return { backend: backendType, backend_data: JSON.stringify({ name: group.name }) };
    }

    async deletePlacementGroup(group: PlacementGroup): Promise<void> {
      record('deletePlacementGroup', [group]);
      const found = placementGroups.get(group.name);
      if (!found || found.deleted) return;
      // As EC2 refuses to delete a group that still holds instances.
      if (liveInstances().some((instance) => instance.placementGroup === group.name)) {
        throw new Error(`The placement group ${group.name} is in use`);
      }
      found.deleted = true;
    }

    isSuitablePlacementGroup(group: PlacementGroup, offer: InstanceOffer): boolean {
      return group.configuration.backend === backendType && group.configuration.region === offer.region;
    }

    async terminateInstance(instanceId: string, region: string, backendData?: string | null): Promise<void> {
      record('terminateInstance', [instanceId, region, backendData]);
      const instance = instances.get(instanceId);
      // Unknown, removed and terminated instances are already gone: terminating is idempotent.
      if (!instance || instance.state === 'terminated' || instance.state === 'removed') return;
      instance.state = 'terminated';
      await instance.agent?.stop();
    }

    async updateProvisioningData(provisioningData: JobProvisioningData): Promise<JobProvisioningData> {
      record('updateProvisioningData', [provisioningData]);
      const instance = instances.get(provisioningData.instance_id);
      if (!instance || instance.state === 'removed' || instance.state === 'terminated') {
        throw new ProvisioningError(`The fake instance ${provisioningData.instance_id} no longer exists`);
      }
      instance.polls += 1;
      if (instance.polls < provisioningPolls) return provisioningData;
      if (instance.state === 'provisioning') {
        if (options.bootAgents) {
          instance.agent = await bootLocalAgent({ kind: computeKind, token: instance.agentToken });
        }
        instance.state = 'running';
      }
      const sequence =
        (JSON.parse(provisioningData.backend_data ?? '{}') as { sequence?: number }).sequence ?? 0;
      const agent = instance.agent;
      // The last octet of the made-up addresses: 1 to 254, never the network or broadcast address.
      const hostNumber = (sequence % 254) + 1;
      return {
        ...provisioningData,
        hostname: agent ? agent.host : `${UNROUTABLE_PREFIX}${hostNumber}`,
        internal_ip: agent ? agent.host : `10.0.0.${hostNumber}`,
        backend_data: JSON.stringify(agent ? { sequence, agent_ports: agent.agentPorts } : { sequence }),
      };
    }
  }

  const plugin = defineBackendPlugin<FakeBackendConfigWithCreds, FakeBackendConfigWithoutCreds>({
    type: backendType,
    computeKind,
    capabilities,
    configSchemas: configModels,
    createConfigurator: () => ({
      type: backendType,
      async validateConfig(config) {
        if (config.creds.api_key !== validApiKey) {
          throw new InvalidCredentialsError([['creds', 'api_key']]);
        }
      },
      async createBackend(projectName, configWithCreds) {
        const { config, auth } = configModels.splitCreds(configWithCreds);
        return configModels.toRecord(
          { ...config, regions: config.regions ?? ['fake-region-1'], project_name: projectName },
          auth,
        );
      },
      getBackendConfigWithCreds: (record: StoredBackendRecord) =>
        configModels.configWithCredsFromRecord(record),
      getBackendConfigWithoutCreds: (record: StoredBackendRecord) =>
        configModels.configWithoutCredsFromRecord(record),
      async getCompute(record: StoredBackendRecord) {
        return new FakeCompute(configModels.configFromRecord(record));
      },
    }),
  }) as BackendPlugin;

  const removeInstance = async (instanceId: string) => {
    const instance = instances.get(instanceId);
    if (!instance) throw new Error(`The fake cloud has no instance ${instanceId}`);
    instance.state = 'removed';
    await instance.agent?.stop();
  };
  const close = async () => {
    await Promise.all([...instances.values()].map((instance) => instance.agent?.stop()));
  };
  const failNextLaunchWithNoCapacity = (count = 1) => {
    launchFailures += count;
  };

  return {
    plugin,
    calls,
    callsOf: (method) => calls.filter((call) => call.method === method),
    instances,
    liveInstances,
    placementGroups,
    gatewayInstances,
    launchesOf: (dstackInstanceId) => launchCounts.get(dstackInstanceId) ?? 0,
    hangNextLaunch(count = 1) {
      launchHangs += count;
    },
    failNextLaunchWithNoCapacity,
    failNext(method, error, count = 1) {
      const queue = failures.get(method) ?? [];
      queue.push({ error, remaining: count });
      failures.set(method, queue);
    },
    removeInstance,
    close,
    asEmulator: () => ({
      close,
      failNextLaunchWithNoCapacity,
      removeInstance,
      agentOf: (instanceId) => instances.get(instanceId)?.agent,
      launchedMachineCount: () => instances.size,
    }),
  };
}

/** The `fake` backend plugin alone, for tests that only register it (see `createFakeBackend` for the controls). */
export function createFakeBackendPlugin(options: FakeBackendOptions = {}): BackendPlugin {
  return createFakeBackend(options).plugin;
}
