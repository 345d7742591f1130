/**
 * OCI's own SDK clients of one backend config, one set per region (dstack's `OCIRegionClient`):
 * the request signer from the creds (an API key given in the config, or a profile of an OCI CLI
 * config file on the server), `ComputeClient`, `VirtualNetworkClient`, `IdentityClient` and
 * `MarketplaceClient`. `endpoint_url` points them at `<endpoint_url>/<service>/<region>` instead of
 * OCI's `https://<service>.<region>.oraclecloud.com`.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import * as common from 'oci-common';
import * as core from 'oci-core';
import * as identity from 'oci-identity';
import * as marketplace from 'oci-marketplace';
import type { OciCreds } from './oci-config.js';

type AuthProvider = common.AuthenticationDetailsProvider;

/** `~/…` as the OCI CLI reads it. */
function expandHome(path: string): string {
  return path.startsWith('~/') ? `${homedir()}${path.slice(1)}` : path;
}

/** The request signer and the tenancy of `creds`. */
export function ociAuthProvider(creds: OciCreds): {
  provider: AuthProvider;
  tenancy: string;
  region: string;
} {
  if (creds.type === 'default') {
    const provider = new common.ConfigFileAuthenticationDetailsProvider(
      expandHome(creds.file),
      creds.profile,
    );
    return { provider, tenancy: provider.getTenantId(), region: provider.getRegion()?.regionId ?? '' };
  }
  const key = creds.key_content ?? readFileSync(expandHome(creds.key_file ?? ''), 'utf8');
  const provider = new common.SimpleAuthenticationDetailsProvider(
    creds.tenancy,
    creds.user,
    creds.fingerprint,
    key,
    creds.pass_phrase ?? null,
  );
  return { provider, tenancy: creds.tenancy, region: creds.region };
}

/**
 * Retries what OCI asks to retry (429 TooManyRequests, 409 IncorrectState, 502–504), not a 500:
 * OCI answers "Out of host capacity" as a 500, which must reach the backend at once so the next
 * offer is tried (the SDK's default condition would retry it for minutes).
 */
const RETRY_CONFIGURATION: common.RetryConfiguration = {
  terminationStrategy: new common.MaxAttemptsTerminationStrategy(3),
  delayStrategy: new common.ExponentialBackoffDelayStrategy(5),
  retryCondition: (error: common.OciError) =>
    error.statusCode === 429 ||
    (error.statusCode === 409 && error.serviceCode === 'IncorrectState') ||
    [502, 503, 504].includes(error.statusCode),
};

/**
 * The SDK's HTTP client with its signer, minus one header: the signer signs `Content-Length` and
 * sets it on the request, and fetch adds its own, so undici (7, once the process has loaded it as
 * the global dispatcher) refuses the doubled header as invalid. Fetch sends the same length.
 */
function httpClient(provider: AuthProvider): common.HttpClient {
  const signer = new common.DefaultRequestSigner(provider);
  const signing: common.RequestSigner = {
    async signHttpRequest(request, forceExcludeBody) {
      await signer.signHttpRequest(request, forceExcludeBody);
      request.headers.delete('content-length');
    },
  };
  return new common.FetchHttpClient(signing, null);
}

interface ClientWithEndpoint {
  endpoint: string;
  regionId: string;
}

/** One region's clients, made on first use. */
export class OciRegionClients {
  readonly region: string;
  readonly #endpointUrl: string | null | undefined;
  readonly #httpClient: common.HttpClient;
  #compute?: core.ComputeClient;
  #network?: core.VirtualNetworkClient;
  #identity?: identity.IdentityClient;
  #marketplace?: marketplace.MarketplaceClient;

  constructor(provider: AuthProvider, region: string, endpointUrl: string | null | undefined) {
    this.region = region;
    this.#endpointUrl = endpointUrl;
    this.#httpClient = httpClient(provider);
  }

  #pointed<T extends ClientWithEndpoint>(client: T, service: string): T {
    // The region first (it sets OCI's endpoint), then a custom endpoint over it.
    client.regionId = this.region;
    if (this.#endpointUrl)
      client.endpoint = `${this.#endpointUrl.replace(/\/+$/, '')}/${service}/${this.region}`;
    return client;
  }

  get compute(): core.ComputeClient {
    this.#compute ??= this.#pointed(
      new core.ComputeClient({ httpClient: this.#httpClient }, { retryConfiguration: RETRY_CONFIGURATION }),
      'iaas',
    );
    return this.#compute;
  }

  get network(): core.VirtualNetworkClient {
    this.#network ??= this.#pointed(
      new core.VirtualNetworkClient(
        { httpClient: this.#httpClient },
        { retryConfiguration: RETRY_CONFIGURATION },
      ),
      'iaas',
    );
    return this.#network;
  }

  get identity(): identity.IdentityClient {
    this.#identity ??= this.#pointed(
      new identity.IdentityClient(
        { httpClient: this.#httpClient },
        { retryConfiguration: RETRY_CONFIGURATION },
      ),
      'identity',
    );
    return this.#identity;
  }

  get marketplace(): marketplace.MarketplaceClient {
    this.#marketplace ??= this.#pointed(
      new marketplace.MarketplaceClient(
        { httpClient: this.#httpClient },
        { retryConfiguration: RETRY_CONFIGURATION },
      ),
      'marketplace',
    );
    return this.#marketplace;
  }
}

/** Every region's clients of one config, sharing one signer. */
export class OciClients {
  readonly tenancy: string;
  /** The region the creds name (`creds.region`, the profile's `region`). */
  readonly credsRegion: string;
  readonly #provider: AuthProvider;
  readonly #endpointUrl: string | null | undefined;
  readonly #regions = new Map<string, OciRegionClients>();

  constructor(config: { creds: OciCreds; endpoint_url?: string | null }) {
    const { provider, tenancy, region } = ociAuthProvider(config.creds);
    this.#provider = provider;
    this.tenancy = tenancy;
    this.credsRegion = region;
    this.#endpointUrl = config.endpoint_url;
  }

  region(name: string): OciRegionClients {
    let clients = this.#regions.get(name);
    if (!clients) {
      clients = new OciRegionClients(this.#provider, name, this.#endpointUrl);
      this.#regions.set(name, clients);
    }
    return clients;
  }
}

/** Every page of a list call (OCI's pages may be empty before later ones are not, as dstack notes). */
export async function listAll<T>(
  call: (page: string | undefined) => Promise<{ items: T[]; opcNextPage?: string }>,
): Promise<T[]> {
  const items: T[] = [];
  let page: string | undefined;
  do {
    const response = await call(page);
    items.push(...response.items);
    page = response.opcNextPage;
  } while (page);
  return items;
}

/** The status and service code of an error OCI answered with. */
export function ociErrorOf(error: unknown): { status: number; code: string; message: string } | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const record = error as { statusCode?: unknown; serviceCode?: unknown; message?: unknown };
  if (typeof record.statusCode !== 'number') return undefined;
  return {
    status: record.statusCode,
    code: typeof record.serviceCode === 'string' ? record.serviceCode : '',
    message: typeof record.message === 'string' ? record.message : '',
  };
}
