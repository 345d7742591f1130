import * as z from 'zod';
import { InvalidCredentialsError, NotImplementedError } from '../../errors.js';
import type { InstanceOfferWithAvailability } from '../../models/instances.js';
import type { JobProvisioningData } from '../../models/runs.js';
import type { Capability, ComputeWithCreateInstance } from '../compute.js';
import { defineBackendConfigModels } from '../config-models.js';
import type { Configurator, StoredBackendRecord, ValidateConfigOptions } from '../configurator.js';
import { defineBackendPlugin } from '../plugin.js';
import { runJobWithCreateInstance } from '../run-job-with-create-instance.js';

export const sampleConfigModels = defineBackendConfigModels({
  type: 'sample',
  configFields: {
    regions: z.array(z.string()).nullish(),
    public_ips: z.boolean().default(true),
  },
  credsSchemas: {
    api_key: { api_key: z.string().min(1) },
    default: {},
  },
  storedExtra: { project_slug: z.string() },
});

export type SampleConfig = z.output<typeof sampleConfigModels.config>;
export type SampleConfigWithCreds = z.output<typeof sampleConfigModels.backendConfigWithCreds>;
export type SampleBackendConfig = z.output<typeof sampleConfigModels.backendConfig>;

export const SAMPLE_CAPABILITIES: readonly Capability[] = [
  'create-instance',
  'privileged',
  'instance-volumes',
];

export class SampleCompute implements ComputeWithCreateInstance {
  readonly type = 'sample';
  readonly capabilities: readonly Capability[] = SAMPLE_CAPABILITIES;
  readonly terminated: string[] = [];

  constructor(readonly config: SampleConfig) {}

  async getOffers(): Promise<InstanceOfferWithAvailability[]> {
    return [];
  }
  runJob(params: Parameters<ComputeWithCreateInstance['runJob']>[0]): Promise<JobProvisioningData> {
    return runJobWithCreateInstance(this, params);
  }
  async createInstance(offer: InstanceOfferWithAvailability): Promise<JobProvisioningData> {
    return {
      backend: 'sample',
      instance_type: offer.instance,
      instance_id: `i-${offer.availability_zones?.[0] ?? 'any'}`,
      public_ip_enabled: true,
      region: offer.region,
      availability_zone: offer.availability_zones?.[0] ?? null,
      price: offer.price,
      username: 'ubuntu',
      dockerized: true,
    };
  }
  async terminateInstance(instanceId: string): Promise<void> {
    this.terminated.push(instanceId);
  }
  async updateProvisioningData(provisioningData: JobProvisioningData): Promise<JobProvisioningData> {
    return { ...provisioningData, hostname: '203.0.113.7', ssh_port: 22 };
  }
}

export class SampleConfigurator implements Configurator<SampleConfigWithCreds, SampleBackendConfig> {
  readonly type = 'sample';

  async validateConfig(config: SampleConfigWithCreds, options: ValidateConfigOptions): Promise<void> {
    if (config.creds.type === 'default' && !options.defaultCredsEnabled) {
      throw new InvalidCredentialsError([['creds']], { message: 'Default credentials are disabled' });
    }
    if (config.creds.type === 'api_key' && config.creds.api_key !== 'good') {
      throw new InvalidCredentialsError([['creds', 'api_key']]);
    }
  }
  async createBackend(projectName: string, configWithCreds: SampleConfigWithCreds) {
    const { config, auth } = sampleConfigModels.splitCreds(configWithCreds);
    return sampleConfigModels.toRecord(
      { ...config, regions: config.regions ?? ['r1', 'r2'], project_slug: projectName },
      auth,
    );
  }
  getBackendConfigWithCreds(record: StoredBackendRecord) {
    return sampleConfigModels.configWithCredsFromRecord(record);
  }
  getBackendConfigWithoutCreds(record: StoredBackendRecord) {
    return sampleConfigModels.configWithoutCredsFromRecord(record);
  }
  async getCompute(record: StoredBackendRecord) {
    return new SampleCompute(sampleConfigModels.configFromRecord(record));
  }
}

export const samplePlugin = defineBackendPlugin({
  type: 'sample',
  computeKind: 'vm',
  capabilities: SAMPLE_CAPABILITIES,
  configSchemas: sampleConfigModels,
  createConfigurator: () => new SampleConfigurator(),
  provisioningTimeoutSeconds: (instanceType) => (instanceType.startsWith('bm.') ? 1200 : undefined),
});

/** A Compute whose optional capabilities are all stubs, for guard tests. */
export function stubCompute(capabilities: readonly Capability[], methods: readonly string[] = []) {
  const compute: Record<string, unknown> = {
    type: 'stub',
    capabilities,
    getOffers: async () => [],
    runJob: async () => {
      throw new NotImplementedError('runJob');
    },
    terminateInstance: async () => {},
    updateProvisioningData: async (data: unknown) => data,
  };
  for (const method of methods) {
    compute[method] = () => {
      throw new NotImplementedError(method);
    };
  }
  return compute as unknown as SampleCompute;
}
