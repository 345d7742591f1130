/**
 * A backend with unlimited, instant capacity for server tests and benchmarks (it lives in
 * the private @dstack/testing, so it never ships with the server):
 * every "instance" is one shared, real shim (process runtime) on this host, so
 * jobs run through the real agents; `runJob` answers at once and is counted. With
 * `shimProcesses`, the instances take turns on several shims, as on several hosts.
 * Launches are keyed by dstack's instance id, as the contract asks: a repeated
 * launch with the same id returns the first one's instance.
 * The shim runs inside this process, or, as on a real host, as its own process.
 * Being every instance at once, the shared shim cannot require each instance's agent token: it
 * runs without one (its API is open), and the tokens the server sends it are not checked.
 */
import {
  type Capability,
  type ComputeWithCreateInstance,
  defineBackendConfigModels,
  defineBackendPlugin,
  type InstanceConfiguration,
  type InstanceOfferWithAvailability,
  type JobProvisioningData,
  runJobWithCreateInstance,
  type StoredBackendRecord,
} from '@dstack/core';
import { startShim } from '@dstack/shim';
import { type ShimProcess, startShimProcess } from './shim-process.js';

export const INSTANT_BACKEND_TYPE = 'instant';
/** Its instances are shims on this host, reachable from each other on loopback: multi-node tasks run. */
const CAPABILITIES: readonly Capability[] = ['create-instance', 'multinode'];

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
  /**
   * Run the shim as its own process (the built `dstack-shim` command), so that its jobs and
   * runners do not share this process's event loop, as on a real host. Needs `@dstack/shim`
   * built. Default false: the shim runs inside this process.
   */
  shimProcess?: boolean;
  /**
   * How many shim processes the instances take turns on (with `shimProcess`), as jobs spread over
   * hosts: every runner lives in its shim with a few open files of its own, so thousands of runs
   * outgrow one process's limit of open files. Default 1.
   */
  shimProcesses?: number;
  /**
   * Instances never become reachable: they get no hostname, as a machine that never boots,
   * so they stay provisioning until their provisioning deadline. Default false.
   */
  unreachable?: boolean;
  /** The backend's provisioning timeout (the plugin's `provisioningTimeoutSeconds`). Default: dstack's 10 minutes. */
  provisioningTimeoutSeconds?: number;
}

export interface InstantBackend {
  plugin: ReturnType<typeof defineBackendPlugin>;
  /**
   * The job or instance name of each machine launched by `runJob`/`createInstance`; a repeated
   * launch with the same dstack instance id launches none and is not listed.
   */
  readonly provisioned: string[];
  readonly terminated: string[];
  /** How many times `updateProvisioningData` was called. */
  readonly provisioningPolls: number;
  /** Every shim process's id (`shimProcess`), else none. */
  readonly shimPids: readonly number[];
  close(): Promise<void>;
}

export async function createInstantBackend(options: InstantBackendOptions): Promise<InstantBackend> {
  const shims: Array<Pick<ShimProcess, 'port' | 'close'> & { pid?: number }> = options.shimProcess
    ? await Promise.all(
        Array.from({ length: options.shimProcesses ?? 1 }, (_, index) =>
          startShimProcess({ homeDir: index === 0 ? options.homeDir : `${options.homeDir}-${index}` }),
        ),
      )
    : [await startShim({ port: 0, homeDir: options.homeDir })];
  const provisioned: string[] = [];
  /** Launched instances by the dstack instance id they were keyed by. */
  const launches = new Map<string, JobProvisioningData>();
  let polled = 0;
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
      configuration: Pick<InstanceConfiguration, 'instance_name' | 'instance_id'>,
    ): Promise<JobProvisioningData> {
      const launched = launches.get(configuration.instance_id);
      if (launched) return { ...launched };
      provisioned.push(configuration.instance_name);
      const data: JobProvisioningData = {
        backend: INSTANT_BACKEND_TYPE,
        instance_type: chosen.instance,
        instance_id: `instant-${provisioned.length}`,
        hostname: options.unreachable ? null : '127.0.0.1',
        public_ip_enabled: false,
        region: chosen.region,
        price: chosen.price,
        username: 'root',
        ssh_port: null,
        dockerized: true,
        backend_data: JSON.stringify({
          agent_ports: { shim: shims[provisioned.length % shims.length]!.port },
        }),
      };
      launches.set(configuration.instance_id, data);
      return { ...data };
    }
    async terminateInstance(instanceId: string) {
      terminated.push(instanceId);
    }
    async updateProvisioningData(data: JobProvisioningData) {
      polled += 1;
      return data;
    }
  }

  const plugin = defineBackendPlugin({
    type: INSTANT_BACKEND_TYPE,
    computeKind: 'vm',
    capabilities: CAPABILITIES,
    configSchemas: instantConfigModels,
    ...(options.provisioningTimeoutSeconds === undefined
      ? {}
      : { provisioningTimeoutSeconds: options.provisioningTimeoutSeconds }),
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
  return {
    plugin,
    provisioned,
    terminated,
    get provisioningPolls() {
      return polled;
    },
    shimPids: shims.flatMap((shim) => (shim.pid === undefined ? [] : [shim.pid])),
    close: async () => {
      await Promise.all(shims.map((shim) => shim.close()));
    },
  };
}
