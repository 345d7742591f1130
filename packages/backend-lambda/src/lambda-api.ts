/**
 * Lambda Cloud's REST API (`https://cloud.lambdalabs.com/api/v1`, Lambda's OpenAPI document)
 * through undici, with the API key as a bearer token: instance types with their capacity, images
 * (the regions), launch and terminate, instances, and SSH keys. Every failure is Lambda's
 * `{"error": {"code", "message", "suggestion"}}` envelope, turned into core's typed errors by
 * `lambdaApiError`. The base URL and the undici dispatcher are settings, so tests point the real
 * client at an emulator.
 */
import {
  BackendApiCallError,
  BackendAuthenticationError,
  BackendRateLimitError,
  NoCapacityError,
} from '@dstack/core';
import { type Dispatcher, request } from 'undici';

/** Lambda's API root; paths are appended to it. */
export const LAMBDA_DEFAULT_ENDPOINT_URL = 'https://cloud.lambdalabs.com/api/v1';

/** An instance type's hardware (`specs`). */
export interface LambdaInstanceTypeSpecs {
  vcpus: number;
  memory_gib: number;
  storage_gib: number;
  gpus: number;
}

/** `instance_type` of `GET /instance-types` entries and of instances. */
export interface LambdaInstanceType {
  name: string;
  /** `1x A10 (24 GB PCIe)`: what gpuhunt reads the GPUs from. */
  description: string;
  gpu_description?: string;
  price_cents_per_hour: number;
  specs: LambdaInstanceTypeSpecs;
}

export interface LambdaRegion {
  name: string;
  description: string;
}

/** One entry of `GET /instance-types`' `data` map. */
export interface LambdaInstanceTypeEntry {
  instance_type: LambdaInstanceType;
  regions_with_capacity_available: LambdaRegion[];
}

/** Lambda's instance states. */
export type LambdaInstanceStatus =
  | 'booting'
  | 'active'
  | 'unhealthy'
  | 'terminating'
  | 'terminated'
  | 'preempted';

/** An instance as `GET /instances` lists it (the fields this backend reads). */
export interface LambdaInstance {
  id: string;
  name?: string | null;
  ip?: string | null;
  private_ip?: string | null;
  status: LambdaInstanceStatus;
  ssh_key_names: string[];
  region: LambdaRegion;
  instance_type: LambdaInstanceType;
  [field: string]: unknown;
}

export interface LambdaSshKey {
  id: string;
  name: string;
  public_key: string;
}

export interface LambdaLaunchRequest {
  region_name: string;
  instance_type_name: string;
  ssh_key_names: string[];
  file_system_names: string[];
  quantity: number;
  name: string | null;
}

export interface LambdaApiOptions {
  /** The API root. Default `LAMBDA_DEFAULT_ENDPOINT_URL`. */
  endpointUrl?: string;
  apiKey: string;
  /** Where requests go (tests: an emulator's). Default undici's global dispatcher. */
  dispatcher?: Dispatcher;
  /** Per-request limit on headers and body, in milliseconds. Default 120 000 (dstack's). */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 120_000;

/** Lambda's error codes this backend tells apart. */
const CAPACITY_CODES = new Set(['instance-operations/launch/insufficient-capacity', 'global/quota-exceeded']);
const AUTH_CODES = new Set(['global/invalid-api-key', 'global/account-inactive']);
export const LAMBDA_NOT_FOUND_CODE = 'global/object-does-not-exist';

/** A failed call: its status and Lambda's error code (`global/invalid-api-key`…), when it gave one. */
export class LambdaApiFailure {
  constructor(
    readonly what: string,
    readonly status: number,
    readonly code: string | undefined,
    readonly message: string,
    readonly body: string,
  ) {}
}

/** Lambda's answer as core's typed error: capacity and quota, authentication, throttling, other. */
export function lambdaApiError(failure: LambdaApiFailure, url: string): Error {
  const text = `Lambda ${failure.what}: ${failure.code ? `${failure.code}: ` : ''}${failure.message}`;
  if (failure.code !== undefined && CAPACITY_CODES.has(failure.code)) return new NoCapacityError(text);
  if (failure.status === 401 || failure.status === 403 || (failure.code && AUTH_CODES.has(failure.code))) {
    return new BackendAuthenticationError(text);
  }
  if (failure.status === 429) return new BackendRateLimitError(text);
  return new BackendApiCallError(text, {
    statusCode: failure.status,
    url,
    responseBody: failure.body.slice(0, 2000),
  });
}

/** The Lambda REST client of one API key. */
export class LambdaApi {
  readonly #baseUrl: string;
  readonly #apiKey: string;
  readonly #dispatcher: Dispatcher | undefined;
  readonly #timeoutMs: number;

  constructor(options: LambdaApiOptions) {
    this.#baseUrl = (options.endpointUrl ?? LAMBDA_DEFAULT_ENDPOINT_URL).replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    this.#dispatcher = options.dispatcher;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** `GET /instance-types`: every type with the regions that have capacity for it now. */
  async listInstanceTypes(signal?: AbortSignal): Promise<Record<string, LambdaInstanceTypeEntry>> {
    return (await this.#data('GET', '/instance-types', undefined, signal)) as Record<
      string,
      LambdaInstanceTypeEntry
    >;
  }

  /** `GET /images`: the images of every region (gpuhunt reads the regions from them). */
  async listImages(signal?: AbortSignal): Promise<Array<{ region: LambdaRegion; [field: string]: unknown }>> {
    return (await this.#data('GET', '/images', undefined, signal)) as Array<{ region: LambdaRegion }>;
  }

  async listInstances(signal?: AbortSignal): Promise<LambdaInstance[]> {
    return (await this.#data('GET', '/instances', undefined, signal)) as LambdaInstance[];
  }

  /** `GET /instances/{id}`; null when Lambda does not know the id (terminated long ago, never made). */
  async getInstance(id: string): Promise<LambdaInstance | null> {
    const answer = await this.#call('GET', `/instances/${encodeURIComponent(id)}`);
    if (answer instanceof LambdaApiFailure) {
      if (answer.status === 404 || answer.code === LAMBDA_NOT_FOUND_CODE) return null;
      throw lambdaApiError(answer, this.#baseUrl);
    }
    return answer as LambdaInstance;
  }

  /** `POST /instance-operations/launch`: the new instances' ids. */
  async launch(body: LambdaLaunchRequest): Promise<string[]> {
    const data = (await this.#data('POST', '/instance-operations/launch', body)) as {
      instance_ids?: unknown;
    };
    if (!Array.isArray(data.instance_ids))
      throw new BackendApiCallError('Lambda launch: no instance_ids in the answer');
    return data.instance_ids as string[];
  }

  /** `POST /instance-operations/terminate`; Lambda refuses ids it does not know (`LambdaApiFailure` thrown as is). */
  async terminate(instanceIds: string[]): Promise<LambdaApiFailure | null> {
    const answer = await this.#call('POST', '/instance-operations/terminate', { instance_ids: instanceIds });
    return answer instanceof LambdaApiFailure ? answer : null;
  }

  async listSshKeys(): Promise<LambdaSshKey[]> {
    return (await this.#data('GET', '/ssh-keys')) as LambdaSshKey[];
  }

  async addSshKey(name: string, publicKey: string): Promise<LambdaSshKey> {
    return (await this.#data('POST', '/ssh-keys', { name, public_key: publicKey })) as LambdaSshKey;
  }

  /** Whether Lambda accepts the key: false on 401/403, other failures thrown. */
  async acceptsKey(signal?: AbortSignal): Promise<boolean> {
    const answer = await this.#call('GET', '/instance-types', undefined, signal);
    if (answer instanceof LambdaApiFailure) {
      if (answer.status === 401 || answer.status === 403) return false;
      throw lambdaApiError(answer, this.#baseUrl);
    }
    return true;
  }

  async #data(method: 'GET' | 'POST', path: string, body?: unknown, signal?: AbortSignal): Promise<unknown> {
    const answer = await this.#call(method, path, body, signal);
    if (answer instanceof LambdaApiFailure) throw lambdaApiError(answer, `${this.#baseUrl}${path}`);
    return answer;
  }

  /** The answer's `data`, or the failure as Lambda described it. */
  async #call(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<unknown | LambdaApiFailure> {
    const what = `${method} ${path}`;
    let response: Dispatcher.ResponseData;
    try {
      response = await request(`${this.#baseUrl}${path}`, {
        method,
        headers: {
          accept: 'application/json',
          authorization: `Bearer ${this.#apiKey}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        dispatcher: this.#dispatcher,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
        signal,
      });
    } catch (error) {
      throw new BackendApiCallError(`Lambda ${what} failed: ${(error as Error).message}`, {
        url: `${this.#baseUrl}${path}`,
        isRetryable: true,
        cause: error,
      });
    }
    const text = await response.body.text();
    let parsed: { data?: unknown; error?: { code?: unknown; message?: unknown } } | null = null;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      // A proxy's HTML page: kept as the failure's body.
    }
    if (response.statusCode >= 200 && response.statusCode < 300 && parsed && 'data' in parsed)
      return parsed.data;
    const error = parsed?.error;
    return new LambdaApiFailure(
      what,
      response.statusCode,
      typeof error?.code === 'string' ? error.code : undefined,
      typeof error?.message === 'string' ? error.message : `HTTP ${response.statusCode}`,
      text,
    );
  }
}
