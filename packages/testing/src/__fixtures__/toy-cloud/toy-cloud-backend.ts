/**
 * A minimal real backend for the Toy Cloud emulator: undici calls, errors
 * mapped to core's (401 → InvalidCredentialsError, 409 → NoCapacityError,
 * 404 on delete → already gone). It exists to run `testBackend` end to end.
 */
import {
  BackendApiCallError,
  type BackendPlugin,
  type ComputeWithCreateInstance,
  defineBackendConfigModels,
  defineBackendPlugin,
  type InstanceConfiguration,
  type InstanceOfferWithAvailability,
  InvalidCredentialsError,
  type JobProvisioningData,
  NoCapacityError,
  type Requirements,
  runJobWithCreateInstance,
  type StoredBackendRecord,
} from '@dstack/core';
import { request } from 'undici';
import { z } from 'zod';
import { offerMismatch } from '../../conformance/offer-checks.js';

const models = defineBackendConfigModels({
  type: 'toycloud',
  configFields: { endpoint: z.string().url() },
  credsSchemas: { api_key: { api_key: z.string().min(1) } },
});
type ToyConfig = z.output<typeof models.config>;

interface ToyInstanceType {
  name: string;
  cpus: number;
  memory_gib: number;
  price: number;
  region: string;
}

class ToyCloudClient {
  constructor(private readonly config: ToyConfig) {}

  async call<T>(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: T }> {
    const response = await request(`${this.config.endpoint}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.config.creds.api_key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.body.text();
    if (response.statusCode === 401) throw new InvalidCredentialsError([['creds', 'api_key']]);
    if (response.statusCode === 409) throw new NoCapacityError(`Toy Cloud: ${text}`);
    if (response.statusCode >= 400 && response.statusCode !== 404) {
      throw new BackendApiCallError(`Toy Cloud ${method} ${path} answered ${response.statusCode}`, {
        statusCode: response.statusCode,
        responseBody: text,
      });
    }
    return { status: response.statusCode, body: (text ? JSON.parse(text) : undefined) as T };
  }
}

class ToyCloudCompute implements ComputeWithCreateInstance {
  readonly type = 'toycloud';
  readonly capabilities = ['create-instance'] as const;
  readonly #client: ToyCloudClient;
  constructor(config: ToyConfig) {
    this.#client = new ToyCloudClient(config);
  }

  async getOffers(requirements: Requirements): Promise<InstanceOfferWithAvailability[]> {
    const { body } = await this.#client.call<{ instance_types: ToyInstanceType[] }>(
      'GET',
      '/v1/instance-types',
    );
    return body.instance_types
      .map(
        (type): InstanceOfferWithAvailability => ({
          backend: 'toycloud',
          instance: {
            name: type.name,
            resources: {
              cpus: type.cpus,
              memory_mib: type.memory_gib * 1024,
              gpus: [],
              spot: false,
              disk: { size_mib: 100 * 1024 },
            },
          },
          region: type.region,
          price: type.price,
          backend_data: {},
          availability: 'available',
          availability_zones: null,
          instance_runtime: 'shim',
          blocks: 1,
          total_blocks: 1,
        }),
      )
      .filter((offer) => offerMismatch(offer, requirements) === null)
      .sort((left, right) => left.price - right.price);
  }

  runJob(params: Parameters<ComputeWithCreateInstance['runJob']>[0]) {
    return runJobWithCreateInstance(this, params);
  }

  async createInstance(
    offer: InstanceOfferWithAvailability,
    config: InstanceConfiguration,
  ): Promise<JobProvisioningData> {
    // The provider's idempotency key: a retried create returns the instance the first one made.
    const { body } = await this.#client.call<{ id: string }>('POST', '/v1/instances', {
      type: offer.instance.name,
      region: offer.region,
      client_token: config.instance_id,
      // Toy Cloud's stand-in for user data: the instance starts its shim with this token.
      agent_token: config.agent_token,
    });
    return {
      backend: 'toycloud',
      instance_type: offer.instance,
      instance_id: body.id,
      hostname: null,
      public_ip_enabled: true,
      region: offer.region,
      price: offer.price,
      username: 'ubuntu',
      ssh_port: null,
      dockerized: true,
    };
  }

  async updateProvisioningData(data: JobProvisioningData): Promise<JobProvisioningData> {
    const { body } = await this.#client.call<{ status: string; ip: string | null; shim_port: number | null }>(
      'GET',
      `/v1/instances/${data.instance_id}`,
    );
    if (body?.status !== 'running' || !body.ip) return data;
    return {
      ...data,
      hostname: body.ip,
      backend_data: JSON.stringify({ agent_ports: { shim: body.shim_port } }),
    };
  }

  async terminateInstance(instanceId: string): Promise<void> {
    // 404: already gone, which is what terminating wants.
    await this.#client.call('DELETE', `/v1/instances/${instanceId}`);
  }
}

export const toyCloudPlugin: BackendPlugin = defineBackendPlugin({
  type: 'toycloud',
  computeKind: 'vm',
  capabilities: ['create-instance'],
  configSchemas: models,
  createConfigurator: () => ({
    type: 'toycloud',
    async validateConfig(config: unknown) {
      const parsed = models.backendConfigWithCreds.parse(config);
      await new ToyCloudClient({ ...parsed }).call('GET', '/v1/account');
    },
    async createBackend(_projectName: string, config: unknown) {
      const { config: stored, auth } = models.splitCreds(models.backendConfigWithCreds.parse(config));
      return models.toRecord(stored as Parameters<typeof models.toRecord>[0], auth);
    },
    getBackendConfigWithCreds: (record: StoredBackendRecord) => models.configWithCredsFromRecord(record),
    getBackendConfigWithoutCreds: (record: StoredBackendRecord) =>
      models.configWithoutCredsFromRecord(record),
    async getCompute(record: StoredBackendRecord) {
      return new ToyCloudCompute(models.configFromRecord(record));
    },
  }),
}) as BackendPlugin;
