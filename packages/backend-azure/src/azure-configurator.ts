import {
  BackendError,
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
import {
  managedIdentityId,
  parseSubnetId,
  parseVmManagedIdentity,
  parseVpcId,
  resolveSubnet,
} from './azure-networks.js';

/** The ARM API version of `Microsoft.ManagedIdentity/userAssignedIdentities` reads. */
const MANAGED_IDENTITY_API_VERSION = '2023-01-31';

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

/** The message of a `BackendError` (a format or network check of `azure-networks.ts`). */
function reasonOf(error: unknown): string {
  if (BackendError.isInstance(error)) return (error as Error).message;
  throw error;
}

/**
 * dstack's checks of the network fields that need no call (`_check_config_vpc`): formats, `public_ips:
 * false` only with a network of the user's, each region in one map only, and every region in one.
 */
function checkNetworkFields(config: AzureBackendConfigWithCreds): void {
  for (const [field, parse] of [
    ['vpc_ids', parseVpcId],
    ['subnet_ids', parseSubnetId],
  ] as const) {
    for (const [location, value] of Object.entries(config[field] ?? {})) {
      try {
        parse(value);
      } catch (error) {
        throw invalidConfigField([field, location], reasonOf(error));
      }
    }
  }
  try {
    parseVmManagedIdentity(config.vm_managed_identity);
  } catch (error) {
    throw invalidConfigField(['vm_managed_identity'], reasonOf(error));
  }
  if (config.public_ips === false && config.vpc_ids == null && config.subnet_ids == null) {
    throw invalidConfigField(
      ['public_ips'],
      '`vpc_ids` or `subnet_ids` must be specified if `public_ips: false`.',
    );
  }
  if (config.vpc_ids == null && config.subnet_ids == null) return;
  const inBoth = Object.keys(config.vpc_ids ?? {})
    .filter((location) => config.subnet_ids?.[location] !== undefined)
    .sort();
  if (inBoth.length > 0) {
    throw invalidConfigField(
      ['subnet_ids'],
      `Regions ${JSON.stringify(inBoth)} are configured in both \`vpc_ids\` and \`subnet_ids\`. Each region must be specified in only one of them.`,
    );
  }
  const locations = config.regions ?? AZURE_DEFAULT_LOCATIONS;
  const missing = locations.filter(
    (location) => config.vpc_ids?.[location] === undefined && config.subnet_ids?.[location] === undefined,
  );
  if (missing.length > 0) {
    throw invalidConfigField(
      [config.vpc_ids != null ? 'vpc_ids' : 'subnet_ids'],
      `Networking not configured for regions ${JSON.stringify(missing)}. Configure either \`vpc_ids\` or \`subnet_ids\` for all regions ${config.regions == null ? 'or specify `regions`' : 'specified in `regions`'}.`,
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
  checkNetworkFields(result.data);
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
    await checkManagedIdentity(clients, parsed);
    await checkNetworks(clients, parsed);
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
      // With the user's networks, only the security groups are the backend's (dstack's too).
      const ownNetwork = filled.vpc_ids == null && filled.subnet_ids == null;
      await Promise.all(
        (filled.regions ?? []).map((location) =>
          createNetworkResources(clients, group, location, ownNetwork),
        ),
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

/** The user-assigned identity of `vm_managed_identity` exists (`_check_config_vm_managed_identity`). */
async function checkManagedIdentity(
  clients: AzureClients,
  config: AzureBackendConfigWithCreds,
): Promise<void> {
  const identity = parseVmManagedIdentity(config.vm_managed_identity);
  if (!identity) return;
  try {
    await clients.resources.resources.getById(
      managedIdentityId(config.subscription_id, identity.resourceGroup, identity.name),
      MANAGED_IDENTITY_API_VERSION,
    );
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode !== 404) throw typedAzureError(error);
    throw invalidConfigField(
      ['vm_managed_identity'],
      `Managed identity ${identity.name} not found in resource group ${identity.resourceGroup}`,
    );
  }
}

/** Every region's network or subnet of `vpc_ids`/`subnet_ids` is there and usable (`_check_config_vpc`). */
async function checkNetworks(clients: AzureClients, config: AzureBackendConfigWithCreds): Promise<void> {
  if (config.vpc_ids == null && config.subnet_ids == null) return;
  const publicIps = config.public_ips ?? true;
  await Promise.all(
    (config.regions ?? AZURE_DEFAULT_LOCATIONS).map(async (location) => {
      try {
        await resolveSubnet(clients.network, { ...config, resource_group: null }, location, publicIps);
      } catch (error) {
        const field = config.subnet_ids?.[location] !== undefined ? 'subnet_ids' : 'vpc_ids';
        throw invalidConfigField([field, location], reasonOf(error));
      }
    }),
  );
}

/**
 * dstack's network resources of one region: the network and subnet (unless the user's are used),
 * and the two security groups.
 */
async function createNetworkResources(
  clients: AzureClients,
  group: string,
  location: string,
  ownNetwork: boolean,
): Promise<void> {
  const network = clients.network;
  if (ownNetwork) {
    await network.virtualNetworks.beginCreateOrUpdateAndWait(group, defaultNetworkName(group, location), {
      location,
      addressSpace: { addressPrefixes: ['10.0.0.0/16'] },
      subnets: [{ name: defaultSubnetName(group, location), addressPrefix: '10.0.0.0/20' }],
    });
  }
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
