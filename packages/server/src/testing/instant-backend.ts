/**
 * A backend with unlimited, instant capacity for server tests and benchmarks:
 * every "instance" is one shared, real shim (process runtime) on this host, so
 * jobs run through the real agents; `runJob` answers at once and is counted.
 */
import {
  type Capability,
  type ComputeWithCreateInstance,
  defineBackendConfigModels,
  defineBackendPlugin,
  type InstanceOfferWithAvailability,
  type JobProvisioningData,
  runJobWithCreateInstance,
  type StoredBackendRecord,
} from '@dstack/core';
import { type ShimServer, startShim } from '@dstack/shim';

export const INSTANT_BACKEND_TYPE = 'instant';
const CAPABILITIES: readonly Capability[] = ['create-instance'];

const instantConfigModels = defineBackendConfigModels({
  type: INSTANT_BACKEND_TYPE,
  configFields: {},
  credsSchemas: { default: {} },
  storedExtra: {},
});

export interface InstantBackendOptions {
  /** Where the shared shim keeps its tasks. */
  homeDir: string;
  /** CPUs, memory (GB) and GPUs the offer claims; default 4 CPUs, 16 GB, no GPU. */
  cpus?: number;
  memoryGb?: number;
}

export interface InstantBackend {
  plugin: ReturnType<typeof defineBackendPlugin>;
  /** How many times `runJob`/`createInstance` was called, by job or instance name. */
  readonly provisioned: string[];
  readonly terminated: string[];
  close(): Promise<void>;
}

export async function createInstantBackend(options: InstantBackendOptions): Promise<InstantBackend> {
  const shim: ShimServer = await startShim({ port: 0, homeDir: options.homeDir });
  const provisioned: string[] = [];
  const terminated: string[] = [];
  const offer: InstanceOfferWithAvailability = {
    backend: INSTANT_BACKEND_TYPE,
    instance: {
      name: 'instant.large',
      resources: {
        cpus: options.cpus ?? 4,
        memory_mib: (options.memoryGb ?? 16) * 1024,
        gpus: [],
        spot: false,
        disk: { size_mib: 200 * 1024 },
      },
    },
    region: 'local',
    price: 0.01,
    backend_data: {},
    availability: 'available',
    availability_zones: null,
    instance_runtime: 'shim',
    blocks: 1,
    total_blocks: 1,
  };

  class InstantCompute implements ComputeWithCreateInstance {
    readonly type = INSTANT_BACKEND_TYPE;
    readonly capabilities = CAPABILITIES;
    async getOffers(requirements: Parameters<ComputeWithCreateInstance['getOffers']>[0]) {
      const cpu = requirements.resources.cpu.count;
      const gpuMin = requirements.resources.gpu?.count.min ?? 0;
      if ((cpu.min ?? 0) > offer.instance.resources.cpus || gpuMin > 0) return [];
      return [offer];
    }
    runJob(params: Parameters<ComputeWithCreateInstance['runJob']>[0]) {
      return runJobWithCreateInstance(this, params);
    }
    async createInstance(
      chosen: InstanceOfferWithAvailability,
      configuration: { instance_name: string },
    ): Promise<JobProvisioningData> {
      provisioned.push(configuration.instance_name);
      return {
        backend: INSTANT_BACKEND_TYPE,
        instance_type: chosen.instance,
        instance_id: `instant-${provisioned.length}`,
        hostname: '127.0.0.1',
        public_ip_enabled: false,
        region: chosen.region,
        price: chosen.price,
        username: 'root',
        ssh_port: null,
        dockerized: true,
        backend_data: JSON.stringify({ agent_ports: { shim: shim.port } }),
      };
    }
    async terminateInstance(instanceId: string) {
      terminated.push(instanceId);
    }
    async updateProvisioningData(data: JobProvisioningData) {
      return data;
    }
  }

  const plugin = defineBackendPlugin({
    type: INSTANT_BACKEND_TYPE,
    computeKind: 'vm',
    capabilities: CAPABILITIES,
    configSchemas: instantConfigModels,
    createConfigurator: () => ({
      type: INSTANT_BACKEND_TYPE,
      async validateConfig() {},
      async createBackend(_projectName: string, config: unknown) {
        const { config: stored, auth } = instantConfigModels.splitCreds(config as never);
        return instantConfigModels.toRecord(stored as never, auth);
      },
      getBackendConfigWithCreds: (record: StoredBackendRecord) =>
        instantConfigModels.configWithCredsFromRecord(record),
      getBackendConfigWithoutCreds: (record: StoredBackendRecord) =>
        instantConfigModels.configWithoutCredsFromRecord(record),
      async getCompute() {
        return new InstantCompute();
      },
    }),
  });
  return { plugin, provisioned, terminated, close: () => shim.close() };
}
