/**
 * Backends that break the contract on purpose, and one made of stubs, for the
 * tests that prove `testBackend` catches them.
 */
import {
  type BackendPlugin,
  type Capability,
  type Compute,
  type ComputeWithCreateInstance,
  defineBackendPlugin,
  type InstanceOfferWithAvailability,
  type JobProvisioningData,
  notImplemented,
  type StoredBackendRecord,
} from '@dstack/core';
import type { BackendEmulator } from '../conformance/test-backend-options.js';
import { FAKE_BACKEND_TYPE, fakeBackendConfigModels } from '../fake-backend/fake-backend-config.js';
import { fakeOffers } from '../fake-backend/fake-offers.js';

/** The configurator's record methods of both fixtures: the config is stored as given. */
const storedAsGiven = {
  async createBackend(projectName: string, configWithCreds: unknown) {
    const { config, auth } = fakeBackendConfigModels.splitCreds(configWithCreds as never);
    return fakeBackendConfigModels.toRecord({ ...config, project_name: projectName }, auth);
  },
  getBackendConfigWithCreds: (record: StoredBackendRecord) =>
    fakeBackendConfigModels.configWithCredsFromRecord(record),
  getBackendConfigWithoutCreds: (record: StoredBackendRecord) =>
    fakeBackendConfigModels.configWithoutCredsFromRecord(record),
};

/** Controls of the broken cloud, as a `testBackend` emulator. */
export interface BrokenCloud extends BackendEmulator {
  failNextLaunchWithNoCapacity(): void;
  removeInstance(instanceId: string): void;
}

/**
 * A VM backend that breaks every rule it can while looking plausible:
 * declares `create-instance` (the suite is told none), accepts any creds,
 * returns offers most expensive first and ignoring requirements, reports
 * capacity errors as plain errors, never fills the hostname, launches a new
 * machine for a repeated launch with the same instance id, and fails to
 * terminate an instance twice or one that is gone.
 */
export function createBrokenBackend(): { plugin: BackendPlugin; cloud: BrokenCloud } {
  const instances = new Set<string>();
  let failNextLaunch = false;
  let launched = 0;
  const capabilities: readonly Capability[] = ['create-instance'];

  const launch = (offer: InstanceOfferWithAvailability): JobProvisioningData => {
    if (failNextLaunch) {
      failNextLaunch = false;
      throw new Error('InsufficientInstanceCapacity');
    }
    launched += 1;
    const instanceId = `broken-${launched}`;
    instances.add(instanceId);
    return {
      backend: FAKE_BACKEND_TYPE,
      instance_type: offer.instance,
      instance_id: instanceId,
      hostname: null,
      public_ip_enabled: true,
      region: offer.region,
      price: offer.price,
      username: 'ubuntu',
      ssh_port: null,
      dockerized: true,
    };
  };

  const compute: ComputeWithCreateInstance = {
    type: FAKE_BACKEND_TYPE,
    capabilities,
    async getOffers() {
      const everything = fakeOffers(
        FAKE_BACKEND_TYPE,
        {},
        { resources: { cpu: { count: {} }, memory: {} } },
        null,
      );
      return everything.reverse();
    },
    async runJob(params) {
      return launch(params.offer);
    },
    async createInstance(offer) {
      return launch(offer);
    },
    async terminateInstance(instanceId) {
      if (!instances.delete(instanceId)) throw new Error(`instance ${instanceId} not found`);
    },
    async updateProvisioningData(data) {
      return data;
    },
  };

  const plugin = defineBackendPlugin({
    type: FAKE_BACKEND_TYPE,
    computeKind: 'vm',
    capabilities,
    configSchemas: fakeBackendConfigModels,
    createConfigurator: () => ({
      type: FAKE_BACKEND_TYPE,
      async validateConfig() {},
      ...storedAsGiven,
      async getCompute(): Promise<Compute> {
        return compute;
      },
    }),
  }) as BackendPlugin;

  return {
    plugin,
    cloud: {
      close: async () => {},
      failNextLaunchWithNoCapacity: () => {
        failNextLaunch = true;
      },
      removeInstance: (instanceId) => {
        instances.delete(instanceId);
      },
    },
  };
}

/**
 * A freshly generated backend: the configurator works, every Compute method
 * is a `notImplemented()` stub. With `stubConfigurator`, `getCompute` is a stub too.
 */
export function createStubBackend(options: { stubConfigurator?: boolean } = {}): BackendPlugin {
  const compute: Compute = {
    type: FAKE_BACKEND_TYPE,
    capabilities: [],
    getOffers: notImplemented<Compute['getOffers']>('StubCompute.getOffers'),
    runJob: notImplemented<Compute['runJob']>('StubCompute.runJob'),
    terminateInstance: notImplemented<Compute['terminateInstance']>('StubCompute.terminateInstance'),
    updateProvisioningData: notImplemented<Compute['updateProvisioningData']>(
      'StubCompute.updateProvisioningData',
    ),
  };
  const getCompute = async () => compute;
  return defineBackendPlugin({
    type: FAKE_BACKEND_TYPE,
    computeKind: 'container',
    capabilities: [],
    configSchemas: fakeBackendConfigModels,
    createConfigurator: () => ({
      type: FAKE_BACKEND_TYPE,
      validateConfig: notImplemented('StubConfigurator.validateConfig'),
      ...storedAsGiven,
      getCompute: options.stubConfigurator
        ? notImplemented<() => Promise<Compute>>('StubConfigurator.getCompute')
        : getCompute,
    }),
  }) as BackendPlugin;
}
