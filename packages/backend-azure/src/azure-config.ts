import { defineBackendConfigModels } from '@dstack/core';
import { z } from 'zod';

/** The backend type: `type: azure` in the server's config.yml and the key of the discovery map. */
export const AZURE_BACKEND_TYPE = 'azure';

/** Resource Manager's endpoint in Azure's public cloud, the default of `endpoint_url`. */
export const AZURE_RESOURCE_MANAGER_URL = 'https://management.azure.com';
/** Microsoft Entra ID's authority host in Azure's public cloud, the default of `authority_host`. */
export const AZURE_AUTHORITY_HOST = 'https://login.microsoftonline.com';

const locationMap = (what: string) => z.record(z.string().min(1), z.string().min(1)).nullish().describe(what);

/**
 * dstack's chain of config models for Azure (`AzureBackendConfig` → `…WithCreds` →
 * `AzureStoredConfig` → `AzureConfig`), with dstack's fields and names, plus this project's
 * endpoint settings (`endpoint_url`, `authority_host`, `ca_certificates`) that point the SDKs at
 * another cloud or an emulator.
 */
export const azureConfigModels = defineBackendConfigModels({
  type: AZURE_BACKEND_TYPE,
  configFields: {
    /** Required. */
    tenant_id: z.string().min(1).describe('The tenant ID.'),
    /** Required. */
    subscription_id: z.string().min(1).describe('The subscription ID.'),
    /** Default: `dstack-{project}`, created by the backend in `eastus`. */
    resource_group: z
      .string()
      .min(1)
      .nullish()
      .describe(
        'The resource group for resources created by dstack. If not specified, dstack creates `dstack-{project}`.',
      ),
    /** Default (absent or null): dstack's Azure locations. */
    regions: z
      .array(z.string().min(1))
      .min(1)
      .nullish()
      .describe('The list of Azure regions (locations). Omit to use all regions.'),
    /** Default: a network per configured region, made by the backend. */
    vpc_ids: locationMap(
      'The mapping from configured Azure locations to network IDs (`networkResourceGroup/networkName`). If not specified, dstack creates a network in every region.',
    ),
    /** Default: none. */
    subnet_ids: locationMap(
      'The mapping from configured Azure locations to subnet IDs (`networkResourceGroup/networkName/subnetName`). A location is in `vpc_ids` or `subnet_ids`, not both.',
    ),
    /** Default true. */
    public_ips: z
      .boolean()
      .nullish()
      .describe(
        'Whether instances get public IPs (the server reaches them there). `false` needs `vpc_ids` or `subnet_ids` whose subnets reach the Internet through a NAT gateway or peering; the server then reaches instances at their private IPs. Default true.',
      ),
    /** Default: none. */
    vm_managed_identity: z
      .string()
      .min(1)
      .nullish()
      .describe(
        'The user-assigned managed identity given to VMs (`managedIdentityResourceGroup/managedIdentityName`).',
      ),
    /** Default: none. */
    tags: z
      .record(z.string().min(1), z.string())
      .nullish()
      .describe("Tags put on every resource the backend creates; dstack's own tags win on conflict."),
    /** Default `https://management.azure.com`. */
    endpoint_url: z
      .string()
      .url()
      .nullish()
      .describe(
        "Resource Manager's endpoint (another Azure cloud, an emulator). Default https://management.azure.com. In API requests only when the server allows custom endpoints.",
      ),
    /** Default `https://login.microsoftonline.com`. */
    authority_host: z
      .string()
      .url()
      .nullish()
      .describe(
        "Microsoft Entra ID's authority host that issues the tokens. Default https://login.microsoftonline.com. In API requests only when the server allows custom endpoints.",
      ),
    /** Default: none (the system's CAs only). */
    ca_certificates: z
      .string()
      .min(1)
      .nullish()
      .describe(
        "PEM certificates trusted besides the system CAs for the two endpoints (an emulator's own). In API requests only when the server allows custom endpoints.",
      ),
  },
  credsSchemas: {
    /** A service principal's client secret. */
    client: {
      client_id: z.string().min(1).describe('The client ID.'),
      client_secret: z.string().min(1).describe('The client secret.'),
      tenant_id: z.string().min(1).nullish().describe('The tenant of the client. Default: `tenant_id`.'),
    },
    /**
     * `DefaultAzureCredential` on the server (environment, managed identity, Azure CLI).
     * Refused when the server runs with `DSTACK_DEFAULT_CREDS_DISABLED`.
     */
    default: {},
  },
});

/** `backends: [{type: azure, ...}]` in the server's config.yml, without creds. */
export type AzureBackendConfig = z.output<typeof azureConfigModels.backendConfig>;
/** The config with creds: what users send and `validateConfig` receives. */
export type AzureBackendConfigWithCreds = z.output<typeof azureConfigModels.backendConfigWithCreds>;
/** One of the backend's kinds of credentials, discriminated by `type`. */
export type AzureCreds = z.output<typeof azureConfigModels.creds>;
/** What the database keeps (without creds). */
export type AzureStoredConfig = z.output<typeof azureConfigModels.storedConfig>;
/** The stored config plus creds: what the Compute is built from. */
export type AzureConfig = z.output<typeof azureConfigModels.config>;
