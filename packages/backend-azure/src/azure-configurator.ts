import {
  type BackendRecord,
  type Configurator,
  InvalidCredentialsError,
  refuseCustomEndpoint,
  refuseDefaultCreds,
  ServerClientError,
  type StoredBackendRecord,
  type ValidateConfigOptions,
} from '@dstack/core';
import type { z } from 'zod';
import { AzureClients } from './azure-clients.js';
import { type AzureCompute, createAzureBackend, typedAzureError } from './azure-compute.js';
import {
  AZURE_AUTHORITY_HOST,
  AZURE_BACKEND_TYPE,
  AZURE_RESOURCE_MANAGER_URL,
  type AzureBackendConfig,
  type AzureBackendConfigWithCreds,
  type AzureConfig,
  type AzureCreds,
  azureConfigModels,
} from './azure-config.js';
import {
  AZURE_DEFAULT_LOCATIONS,
  AZURE_MAIN_LOCATION,
  defaultNetworkName,
  defaultResourceGroupName,
  defaultSecurityGroupName,
  defaultSubnetName,
  gatewaySecurityGroupName,
} from './azure-names.js';

function invalidConfigField(field: readonly string[], reason: string): ServerClientError {
  return new ServerClientError(`Invalid azure backend config: ${field.join('.')}: ${reason}`, {
    fields: [[...field]],
  });
}

function schemaError(error: z.ZodError): ServerClientError {
  const issue = error.issues[0];
  const path = (issue?.path ?? []).map(String);
  return invalidConfigField(path.length > 0 ? path : ['config'], issue?.message ?? 'is invalid');
}

/** Fields dstack has that this backend cannot honour yet: refused, never ignored. */
function refuseUnsupportedFields(config: AzureBackendConfigWithCreds): void {
  for (const field of ['vpc_ids', 'subnet_ids', 'vm_managed_identity'] as const) {
    if (config[field] != null) {
      throw invalidConfigField(
        [field],
        'is not supported by this backend yet; the backend makes its own network per region',
      );
    }
  }
  if (config.public_ips === false) {
    throw invalidConfigField(
      ['public_ips'],
      'public_ips: false needs vpc_ids or subnet_ids, which this backend does not support yet',
    );
  }
}

/**
 * The config checked against the schema and the fields this backend refuses; throws
 * `ServerClientError` naming the first bad field.
 */
export function parseAzureBackendConfig(config: unknown): AzureBackendConfigWithCreds {
  const result = azureConfigModels.backendConfigWithCreds.safeParse(config);
  if (!result.success) throw schemaError(result.error);
  refuseUnsupportedFields(result.data);
  return result.data;
}

/** Refuses creds of type `default` when they are not enabled for this config, naming `creds.type`. */
export function refuseDisabledDefaultCreds(
  creds: AzureCreds,
  options: Pick<ValidateConfigOptions, 'origin' | 'defaultCredsEnabled'>,
): void {
  refuseDefaultCreds(creds, options, 'client');
}

/**
 * The error for credentials Entra ID refused, naming the fields the user must check (dstack's:
 * the tenant, client id and secret), or `creds.type` when the server has no usable identity.
 */
export function invalidCredentials(creds: AzureCreds, cause?: unknown): InvalidCredentialsError {
  const fields =
    creds.type === 'client'
      ? [
          ['creds', 'tenant_id'],
          ['creds', 'client_id'],
          ['creds', 'client_secret'],
        ]
      : [['creds', 'type']];
  return new InvalidCredentialsError(fields, { cause });
}

/** The config with every default filled, as the Compute gets it. */
function withDefaults(config: AzureBackendConfigWithCreds, projectName: string): AzureConfig {
  return {
    ...config,
    regions: config.regions ?? [...AZURE_DEFAULT_LOCATIONS],
    resource_group: config.resource_group ?? defaultResourceGroupName(projectName),
  } as AzureConfig;
}

/** Runs one SDK call, mapping refused credentials to `InvalidCredentialsError`. */
async function withCredentials<T>(creds: AzureCreds, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const typed = typedAzureError(error);
    if (typed instanceof Error && typed.name === 'BackendAuthenticationError')
      throw invalidCredentials(creds, error);
    throw typed;
  }
}

/**
 * Turns `backends: [{type: azure, ...}]` into a stored record and an `AzureCompute`, as dstack's
 * configurator: the resource group (`dstack-{project}` unless given) and, in every region, the
 * default network with its subnet, the instances' security group (SSH in) and the gateways'.
 */
export class AzureConfigurator implements Configurator<AzureBackendConfigWithCreds, AzureBackendConfig> {
  readonly type = AZURE_BACKEND_TYPE;

  /**
   * Refuses what a config from the API may not make the server do, then checks the creds with a
   * read-only call (the subscription), and that `resource_group`, when given, exists.
   */
  async validateConfig(config: AzureBackendConfigWithCreds, options: ValidateConfigOptions): Promise<void> {
    const parsed = parseAzureBackendConfig(config);
    refuseDisabledDefaultCreds(parsed.creds, options);
    refuseCustomEndpoint(options, ['endpoint_url'], parsed.endpoint_url, {
      defaults: [AZURE_RESOURCE_MANAGER_URL],
    });
    refuseCustomEndpoint(options, ['authority_host'], parsed.authority_host, {
      defaults: [AZURE_AUTHORITY_HOST],
    });
    refuseCustomEndpoint(options, ['ca_certificates'], parsed.ca_certificates);
    const clients = new AzureClients(parsed as AzureConfig);
    const subscription = await withCredentials(parsed.creds, async () => {
      try {
        return await clients.resources.resourceGroups.list().next();
      } catch (error) {
        if ((error as { code?: string }).code === 'SubscriptionNotFound') return 'not found';
        throw error;
      }
    });
    if (subscription === 'not found')
      throw invalidConfigField(['subscription_id'], 'Invalid subscription_id');
    if (parsed.resource_group != null) {
      const exists = await clients.resources.resourceGroups.checkExistence(parsed.resource_group);
      if (!exists.body)
        throw invalidConfigField(['resource_group'], `Resource group ${parsed.resource_group} not found`);
    }
  }

  /** Fills the defaults and creates the resource group and each region's network resources (idempotent PUTs). */
  async createBackend(projectName: string, config: AzureBackendConfigWithCreds): Promise<BackendRecord> {
    const filled = withDefaults(parseAzureBackendConfig(config), projectName);
    const clients = new AzureClients(filled);
    const group = filled.resource_group as string;
    await withCredentials(filled.creds, async () => {
      if (config.resource_group == null) {
        await clients.resources.resourceGroups.createOrUpdate(group, { location: AZURE_MAIN_LOCATION });
      }
      await Promise.all(
        (filled.regions ?? []).map((location) => createNetworkResources(clients, group, location)),
      );
    });
    const { config: stored, auth } = azureConfigModels.splitCreds(filled);
    return azureConfigModels.toRecord(stored, auth);
  }

  getBackendConfigWithCreds(record: StoredBackendRecord): AzureBackendConfigWithCreds {
    return azureConfigModels.configWithCredsFromRecord(record);
  }

  getBackendConfigWithoutCreds(record: StoredBackendRecord): AzureBackendConfig {
    return azureConfigModels.configWithoutCredsFromRecord(record);
  }

  /** Builds the Compute without calling Azure: clients are created on first use. */
  async getCompute(record: StoredBackendRecord): Promise<AzureCompute> {
    return createAzureBackend({ config: azureConfigModels.configFromRecord(record) });
  }
}

/** dstack's network resources of one region: the network and subnet, and the two security groups. */
async function createNetworkResources(clients: AzureClients, group: string, location: string): Promise<void> {
  const network = clients.network;
  await network.virtualNetworks.beginCreateOrUpdateAndWait(group, defaultNetworkName(group, location), {
    location,
    addressSpace: { addressPrefixes: ['10.0.0.0/16'] },
    subnets: [{ name: defaultSubnetName(group, location), addressPrefix: '10.0.0.0/20' }],
  });
  await network.networkSecurityGroups.beginCreateOrUpdateAndWait(
    group,
    defaultSecurityGroupName(group, location),
    {
      location,
      securityRules: [
        {
          name: 'runner_ssh',
          protocol: 'Tcp',
          sourceAddressPrefix: 'Internet',
          sourcePortRange: '*',
          destinationAddressPrefix: '*',
          destinationPortRange: '22',
          access: 'Allow',
          priority: 100,
          direction: 'Inbound',
        },
      ],
    },
  );
  await network.networkSecurityGroups.beginCreateOrUpdateAndWait(
    group,
    gatewaySecurityGroupName(group, location),
    {
      location,
      securityRules: [
        {
          name: 'gateway_all',
          protocol: 'Tcp',
          sourceAddressPrefix: 'Internet',
          sourcePortRange: '*',
          destinationAddressPrefix: '*',
          destinationPortRanges: ['22', '80', '443'],
          access: 'Allow',
          priority: 101,
          direction: 'Inbound',
        },
      ],
    },
  );
}
