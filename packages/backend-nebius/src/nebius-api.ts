/**
 * Nebius's gRPC API through @grpc/grpc-js, as Nebius's SDKs call it: each service at
 * `<api_service_name>.api.nebius.cloud:443` over TLS (`compute`, `vpc`, `cpl.iam`, `tokens.iam`,
 * `api.calculator.billing-data-plane`), or every service at one custom `endpoint_url` (an
 * emulator: plaintext for `http://`). Calls carry `authorization: Bearer <IAM token>`, the token
 * got from the token exchange service for a JWT the service account's private key signs
 * (RS256, `kid` the public key's ID), renewed before it expires and once more on UNAUTHENTICATED.
 * Mutations answer long-running `Operation`s, polled through `nebius.common.v1.OperationService`
 * at the service that made them. Failures are `NebiusApiFailure` (the gRPC status), turned into
 * core's typed errors by `nebiusApiError`.
 */
import { createSign } from 'node:crypto';
import { BackendApiCallError, BackendAuthenticationError, NoCapacityError } from '@dstack/core';
import * as grpc from '@grpc/grpc-js';
import type { MethodDefinition, PackageDefinition } from '@grpc/proto-loader';
import { loadNebiusPackageDefinition } from './nebius-protos.js';

export const NEBIUS_DEFAULT_ENDPOINT_URL = 'https://api.nebius.cloud';
/** The audience of the service account's JWT (Nebius's SDKs). */
export const NEBIUS_TOKEN_AUDIENCE = 'token-service.iam.new.nebiuscloud.net';

/** The services this client calls, by proto name, with the `api_service_name` that addresses them. */
const SERVICES = {
  tokens: ['nebius.iam.v1.TokenExchangeService', 'tokens.iam'],
  tenants: ['nebius.iam.v1.TenantService', 'cpl.iam'],
  projects: ['nebius.iam.v1.ProjectService', 'cpl.iam'],
  subnets: ['nebius.vpc.v1.SubnetService', 'vpc'],
  instances: ['nebius.compute.v1.InstanceService', 'compute'],
  disks: ['nebius.compute.v1.DiskService', 'compute'],
  gpuClusters: ['nebius.compute.v1.GpuClusterService', 'compute'],
  platforms: ['nebius.compute.v1.PlatformService', 'compute'],
  computeOperations: ['nebius.common.v1.OperationService', 'compute'],
  calculator: ['nebius.billing.v1alpha1.CalculatorService', 'api.calculator.billing-data-plane'],
} as const;
type ServiceKey = keyof typeof SERVICES;

export interface NebiusMetadata {
  id: string;
  parent_id: string;
  name: string;
  labels?: Record<string, string>;
}
export interface NebiusContainer {
  metadata: NebiusMetadata;
  spec?: { region?: string };
  status?: { region?: string };
}
export interface NebiusOperation {
  id: string;
  resource_id: string;
  /** Set once the operation is done: code 0 is success. */
  status: { code: number; message: string } | null;
}
export interface NebiusDisk {
  metadata: NebiusMetadata;
  status: { state: string; read_write_attachment: string } | null;
}
export interface NebiusInstance {
  metadata: NebiusMetadata;
  spec: Record<string, unknown>;
  status: {
    state: string;
    network_interfaces: Array<{
      ip_address?: { address: string } | null;
      public_ip_address?: { address: string } | null;
    }>;
  } | null;
}
export interface NebiusPreset {
  name: string;
  resources: { vcpu_count: number; memory_gibibytes: number; gpu_count: number };
  allow_gpu_clustering: boolean;
}
export interface NebiusPlatform {
  metadata: NebiusMetadata;
  spec: { presets: NebiusPreset[]; gpu_memory_gigabytes: number };
  status: { allowed_for_preemptibles: boolean } | null;
}

export interface NebiusApiOptions {
  serviceAccountId: string;
  publicKeyId: string;
  /** The service account's RSA private key (PEM). */
  privateKey: string;
  /** Default `https://api.nebius.cloud`. */
  endpointUrl?: string;
  /** Per-call deadline in milliseconds. Default 10 000 (dstack's REQUEST_TIMEOUT). */
  timeoutMs?: number;
  /** The loaded protos; default the vendored ones. */
  definition?: PackageDefinition;
  /** Cancels every call of this client (a validation the server gave up on). */
  signal?: AbortSignal;
}

/** A failed call: the gRPC status code and details. */
export class NebiusApiFailure extends Error {
  constructor(
    readonly what: string,
    readonly code: grpc.status,
    readonly details: string,
  ) {
    super(`Nebius ${what}: ${grpc.status[code] ?? code}: ${details}`);
  }
}

/** Nebius's failure as core's typed error (dstack: RESOURCE_EXHAUSTED or a quota message is no capacity). */
export function nebiusApiError(failure: NebiusApiFailure): Error {
  if (failure.code === grpc.status.RESOURCE_EXHAUSTED || failure.details.includes('Quota limit exceeded')) {
    return new NoCapacityError(failure.message, { cause: failure });
  }
  if (failure.code === grpc.status.UNAUTHENTICATED || failure.code === grpc.status.PERMISSION_DENIED) {
    return new BackendAuthenticationError(failure.message);
  }
  if (failure.code === grpc.status.UNAVAILABLE || failure.code === grpc.status.DEADLINE_EXCEEDED) {
    return new BackendApiCallError(failure.message, { isRetryable: true, cause: failure });
  }
  return new BackendApiCallError(failure.message, { cause: failure });
}

/** Any error: Nebius's as core's, the rest as they are. */
export function typedNebiusError(error: unknown): unknown {
  return error instanceof NebiusApiFailure ? nebiusApiError(error) : error;
}

let sharedDefinition: PackageDefinition | undefined;

/** The vendored protos, parsed once per process (about 100 ms). */
function vendoredDefinition(): PackageDefinition {
  sharedDefinition ??= loadNebiusPackageDefinition();
  return sharedDefinition;
}
const TOKEN_RENEW_MARGIN_MS = 60_000;

/** The JWT Nebius's token exchange takes for a service account (RS256, one minute). */
export function serviceAccountJwt(
  options: Pick<NebiusApiOptions, 'serviceAccountId' | 'publicKeyId' | 'privateKey'>,
  now = Date.now(),
): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const issuedAt = Math.floor(now / 1000);
  const unsigned = `${encode({ alg: 'RS256', typ: 'JWT', kid: options.publicKeyId })}.${encode({
    iss: options.serviceAccountId,
    sub: options.serviceAccountId,
    aud: NEBIUS_TOKEN_AUDIENCE,
    iat: issuedAt,
    exp: issuedAt + 60,
  })}`;
  const signature = createSign('RSA-SHA256').update(unsigned).sign(options.privateKey).toString('base64url');
  return `${unsigned}.${signature}`;
}

/** Nebius's API for one service account. `close()` closes its channels. */
export class NebiusApi {
  readonly #options: NebiusApiOptions;
  readonly #definition: PackageDefinition;
  readonly #endpoint: URL;
  readonly #clients = new Map<string, grpc.Client>();
  #token: { value: string; expiresAt: number } | undefined;

  constructor(options: NebiusApiOptions) {
    this.#options = options;
    this.#definition = options.definition ?? vendoredDefinition();
    this.#endpoint = new URL(options.endpointUrl ?? NEBIUS_DEFAULT_ENDPOINT_URL);
  }

  /** Exchanges the JWT for an IAM token (no retry): throws `NebiusApiFailure` when refused. */
  async accessToken(renew = false): Promise<string> {
    if (!renew && this.#token && this.#token.expiresAt - TOKEN_RENEW_MARGIN_MS > Date.now())
      return this.#token.value;
    let jwt: string;
    try {
      jwt = serviceAccountJwt(this.#options);
    } catch (error) {
      throw new NebiusApiFailure(
        'signing the service account JWT',
        grpc.status.UNAUTHENTICATED,
        (error as Error).message,
      );
    }
    const answer = (await this.#call(
      'tokens',
      'Exchange',
      {
        grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
        requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        subject_token: jwt,
        subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
      },
      null,
    )) as { access_token: string; token_type: string; expires_in: number };
    if (answer.token_type !== 'Bearer') {
      throw new BackendApiCallError(
        `Nebius token exchange: unsupported token type ${JSON.stringify(answer.token_type)}`,
      );
    }
    this.#token = { value: answer.access_token, expiresAt: Date.now() + Number(answer.expires_in) * 1000 };
    return answer.access_token;
  }

  async listTenants(): Promise<NebiusContainer[]> {
    return ((await this.#authorized('tenants', 'List', {})) as { items: NebiusContainer[] }).items;
  }

  async listProjects(tenantId: string): Promise<NebiusContainer[]> {
    return (
      (await this.#authorized('projects', 'List', { parent_id: tenantId, page_size: 999 })) as {
        items: NebiusContainer[];
      }
    ).items;
  }

  async listSubnets(projectId: string): Promise<Array<{ metadata: NebiusMetadata }>> {
    return (
      (await this.#authorized('subnets', 'List', { parent_id: projectId, page_size: 999 })) as {
        items: Array<{ metadata: NebiusMetadata }>;
      }
    ).items;
  }

  async listPlatforms(projectId: string): Promise<NebiusPlatform[]> {
    return (
      (await this.#authorized('platforms', 'List', { parent_id: projectId, page_size: 999 })) as {
        items: NebiusPlatform[];
      }
    ).items;
  }

  createDisk(request: Record<string, unknown>): Promise<NebiusOperation> {
    return this.#authorized('disks', 'Create', request) as Promise<NebiusOperation>;
  }

  /** `DiskService.GetByName`; null when there is none of that name. */
  async getDiskByName(projectId: string, name: string): Promise<NebiusDisk | null> {
    try {
      return (await this.#authorized('disks', 'GetByName', { parent_id: projectId, name })) as NebiusDisk;
    } catch (error) {
      if (error instanceof NebiusApiFailure && error.code === grpc.status.NOT_FOUND) return null;
      throw error;
    }
  }

  getDisk(id: string): Promise<NebiusDisk> {
    return this.#authorized('disks', 'Get', { id }) as Promise<NebiusDisk>;
  }

  deleteDisk(id: string): Promise<NebiusOperation> {
    return this.#authorized('disks', 'Delete', { id }) as Promise<NebiusOperation>;
  }

  /** `GpuClusterService.Create`: an InfiniBand GPU cluster on `fabric` (a cluster placement group). */
  createGpuCluster(projectId: string, name: string, fabric: string): Promise<NebiusOperation> {
    return this.#authorized('gpuClusters', 'Create', {
      metadata: { name, parent_id: projectId },
      spec: { infiniband_fabric: fabric },
    }) as Promise<NebiusOperation>;
  }

  deleteGpuCluster(id: string): Promise<NebiusOperation> {
    return this.#authorized('gpuClusters', 'Delete', { id }) as Promise<NebiusOperation>;
  }

  createInstance(request: Record<string, unknown>): Promise<NebiusOperation> {
    return this.#authorized('instances', 'Create', request) as Promise<NebiusOperation>;
  }

  getInstance(id: string): Promise<NebiusInstance> {
    return this.#authorized('instances', 'Get', { id }) as Promise<NebiusInstance>;
  }

  /** `InstanceService.GetByName`; null when there is none of that name. */
  async getInstanceByName(projectId: string, name: string): Promise<NebiusInstance | null> {
    try {
      return (await this.#authorized('instances', 'GetByName', {
        parent_id: projectId,
        name,
      })) as NebiusInstance;
    } catch (error) {
      if (error instanceof NebiusApiFailure && error.code === grpc.status.NOT_FOUND) return null;
      throw error;
    }
  }

  deleteInstance(id: string): Promise<NebiusOperation> {
    return this.#authorized('instances', 'Delete', { id }) as Promise<NebiusOperation>;
  }

  /** A compute operation's current state. */
  getComputeOperation(id: string): Promise<NebiusOperation> {
    return this.#authorized('computeOperations', 'Get', { id }) as Promise<NebiusOperation>;
  }

  /** The calculator's general hourly total for a resource spec (gpuhunt's price). */
  async estimateHourlyCost(resourceSpec: Record<string, unknown>): Promise<number> {
    const answer = (await this.#authorized('calculator', 'Estimate', { resource_spec: resourceSpec })) as {
      hourly_cost?: { general?: { total?: { cost?: string } | null } | null } | null;
    };
    const cost = answer.hourly_cost?.general?.total?.cost;
    if (cost == null) throw new BackendApiCallError('Nebius calculator: no general hourly cost');
    return Number(cost);
  }

  close(): void {
    for (const client of this.#clients.values()) client.close();
    this.#clients.clear();
  }

  /** A call with the IAM token; UNAUTHENTICATED gets a fresh token and one more try. */
  async #authorized(service: ServiceKey, method: string, request: unknown): Promise<unknown> {
    try {
      return await this.#call(service, method, request, await this.accessToken());
    } catch (error) {
      if (
        !(error instanceof NebiusApiFailure) ||
        error.code !== grpc.status.UNAUTHENTICATED ||
        this.#token === undefined
      )
        throw error;
      return this.#call(service, method, request, await this.accessToken(true));
    }
  }

  #client(service: ServiceKey): grpc.Client {
    const apiName = SERVICES[service][1];
    const custom = this.#endpoint.href.replace(/\/+$/, '') !== NEBIUS_DEFAULT_ENDPOINT_URL;
    const address = custom
      ? `${this.#endpoint.hostname}:${this.#endpoint.port || (this.#endpoint.protocol === 'http:' ? 80 : 443)}`
      : `${apiName}.${this.#endpoint.hostname}:443`;
    let client = this.#clients.get(address);
    if (!client) {
      const credentials =
        this.#endpoint.protocol === 'http:'
          ? grpc.credentials.createInsecure()
          : grpc.credentials.createSsl();
      client = new grpc.Client(address, credentials, { 'grpc.primary_user_agent': 'dstack-ts' });
      this.#clients.set(address, client);
    }
    return client;
  }

  #call(service: ServiceKey, method: string, request: unknown, token: string | null): Promise<unknown> {
    const [serviceName] = SERVICES[service];
    const definition = (
      this.#definition[serviceName] as Record<string, MethodDefinition<unknown, unknown>> | undefined
    )?.[method];
    if (!definition) throw new Error(`Nebius protos: no ${serviceName}.${method}`);
    const metadata = new grpc.Metadata();
    if (token !== null) metadata.set('authorization', `Bearer ${token}`);
    const what = `${serviceName.split('.').pop()}.${method}`;
    const signal = this.#options.signal;
    signal?.throwIfAborted();
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        call.cancel();
        reject(signal?.reason);
      };
      const call = this.#client(service).makeUnaryRequest(
        definition.path,
        definition.requestSerialize,
        definition.responseDeserialize,
        request,
        metadata,
        { deadline: Date.now() + (this.#options.timeoutMs ?? 10_000) },
        (error, response) => {
          signal?.removeEventListener('abort', onAbort);
          if (error) reject(new NebiusApiFailure(what, error.code, error.details || error.message));
          else resolve(response);
        },
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
