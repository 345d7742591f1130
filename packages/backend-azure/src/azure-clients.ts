/**
 * Azure's own SDK clients of one backend config: a `ClientSecretCredential` (client creds) or
 * `DefaultAzureCredential` (default creds) from `@azure/identity`, and the Resource Manager
 * clients of `@azure/arm-compute`, `@azure/arm-network` and `@azure/arm-resources`. `endpoint_url`
 * and `authority_host` point them at another cloud (an emulator), `ca_certificates` adds the CAs
 * that cloud's TLS certificate needs (the SDKs send credentials only over TLS).
 */
import { rootCertificates } from 'node:tls';
import { ComputeManagementClient } from '@azure/arm-compute';
import { NetworkManagementClient } from '@azure/arm-network';
import { ResourceManagementClient } from '@azure/arm-resources';
import { ClientSecretCredential, DefaultAzureCredential, type TokenCredential } from '@azure/identity';
import { AZURE_AUTHORITY_HOST, type AzureConfig } from './azure-config.js';

/** The settings every client and the credential share: TLS trust and the retry budget. */
function commonOptions(config: Pick<AzureConfig, 'ca_certificates'>) {
  return config.ca_certificates ? { tlsOptions: { ca: [...rootCertificates, config.ca_certificates] } } : {};
}

/** The credential of `config.creds`; a client's tenant is `creds.tenant_id`, else `tenant_id`. */
export function azureCredential(
  config: Pick<AzureConfig, 'creds' | 'tenant_id' | 'authority_host' | 'ca_certificates'>,
): TokenCredential {
  const custom = config.authority_host != null && config.authority_host !== AZURE_AUTHORITY_HOST;
  const options = {
    ...commonOptions(config),
    ...(config.authority_host ? { authorityHost: config.authority_host } : {}),
    // Instance discovery asks Microsoft's cloud about the authority: not for an authority of another cloud.
    ...(custom ? { disableInstanceDiscovery: true } : {}),
  };
  if (config.creds.type === 'client') {
    return new ClientSecretCredential(
      config.creds.tenant_id ?? config.tenant_id,
      config.creds.client_id,
      config.creds.client_secret,
      options,
    );
  }
  // No tenant (the collector without AZURE_TENANT_ID): the credential's own, as gpuhunt's.
  return new DefaultAzureCredential({
    ...options,
    ...(config.tenant_id ? { tenantId: config.tenant_id } : {}),
  });
}

/** The Resource Manager clients of one config, made on first use. */
export class AzureClients {
  readonly #config: AzureConfig;
  readonly #credential: TokenCredential;
  #compute?: ComputeManagementClient;
  #network?: NetworkManagementClient;
  #resources?: ResourceManagementClient;

  constructor(config: AzureConfig) {
    this.#config = config;
    this.#credential = azureCredential(config);
  }

  #options() {
    return {
      ...commonOptions(this.#config),
      ...(this.#config.endpoint_url ? { endpoint: this.#config.endpoint_url.replace(/\/+$/, '') } : {}),
    };
  }

  get compute(): ComputeManagementClient {
    this.#compute ??= new ComputeManagementClient(
      this.#credential,
      this.#config.subscription_id,
      this.#options(),
    );
    return this.#compute;
  }

  get network(): NetworkManagementClient {
    this.#network ??= new NetworkManagementClient(
      this.#credential,
      this.#config.subscription_id,
      this.#options(),
    );
    return this.#network;
  }

  get resources(): ResourceManagementClient {
    this.#resources ??= new ResourceManagementClient(
      this.#credential,
      this.#config.subscription_id,
      this.#options(),
    );
    return this.#resources;
  }
}

/** How `@azure/core-lro` reports an operation that ended `Failed`: only in the message. */
const FAILED_OPERATION = /^The long-running operation has failed\. ([A-Za-z]+)\. /;

/**
 * The error code Azure answered with (`AllocationFailed`, `SkuNotAvailable`, …), if any: a
 * `RestError`'s `code`, or the code of a failed long-running operation.
 */
export function azureErrorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const record = error as { code?: unknown; message?: unknown; details?: { error?: { code?: unknown } } };
  if (typeof record.code === 'string') return record.code;
  const nested = record.details?.error?.code;
  if (typeof nested === 'string') return nested;
  return typeof record.message === 'string' ? FAILED_OPERATION.exec(record.message)?.[1] : undefined;
}
