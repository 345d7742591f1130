/**
 * Verda's (formerly DataCrunch) REST API (`https://api.verda.com/v1`, as its Python SDK calls it)
 * through undici. Authentication is OAuth2 client credentials: `POST /oauth2/token` with
 * `grant_type=client_credentials` gives a bearer token, renewed before it expires and once more
 * when a call answers 401. Failures are Verda's `{"code", "message"}` (`invalid_request`,
 * `unauthorized_request`, `insufficient_funds`, `not_found`…), turned into core's typed errors by
 * `verdaApiError`. The base URL and the undici dispatcher are settings, so tests point the real
 * client at an emulator.
 */
import {
  BackendApiCallError,
  BackendAuthenticationError,
  BackendRateLimitError,
  NoCapacityError,
} from '@dstack/core';
import { type Dispatcher, request } from 'undici';

export const VERDA_DEFAULT_ENDPOINT_URL = 'https://api.verda.com/v1';

/** `GET /instance-types` entries (the fields gpuhunt and this backend read). */
export interface VerdaInstanceType {
  id: string;
  instance_type: string;
  /** Prices come as strings. */
  price_per_hour: string | number;
  spot_price: string | number;
  description: string;
  cpu: { description: string; number_of_cores: number };
  gpu: { description: string; number_of_gpus: number };
  memory: { description: string; size_in_gigabytes: number };
  gpu_memory: { description: string; size_in_gigabytes: number };
  storage: { description: string };
}

/** Verda's instance states. */
export type VerdaInstanceStatus =
  | 'ordered'
  | 'provisioning'
  | 'running'
  | 'offline'
  | 'discontinued'
  | 'deleting'
  | 'error'
  | 'no_capacity'
  | 'notfound'
  | string;

export interface VerdaInstance {
  id: string;
  instance_type: string;
  hostname: string;
  status: VerdaInstanceStatus;
  ip?: string | null;
  location: string;
  is_spot?: boolean;
  startup_script_id?: string | null;
  ssh_key_ids: string[];
  [field: string]: unknown;
}

export interface VerdaDeployRequest {
  instance_type: string;
  image: string;
  ssh_key_ids: string[];
  startup_script_id: string | null;
  hostname: string;
  description: string;
  location_code: string;
  os_volume: { name: string; size: number };
  is_spot: boolean;
  pricing: 'FIXED_PRICE' | 'DYNAMIC_PRICE';
}

export interface VerdaApiOptions {
  endpointUrl?: string;
  clientId: string;
  clientSecret: string;
  dispatcher?: Dispatcher;
  /** Per-request limit, in milliseconds. Default 60 000. */
  timeoutMs?: number;
}

/** A failed call: its status and Verda's `code` and `message`. */
export class VerdaApiFailure extends Error {
  constructor(
    readonly what: string,
    readonly status: number,
    readonly code: string | undefined,
    readonly apiMessage: string,
    readonly body: string,
  ) {
    super(`Verda ${what}: ${code ? `${code}: ` : ''}${apiMessage}`);
  }
}

/** Verda's answer as core's typed error. */
export function verdaApiError(failure: VerdaApiFailure): Error {
  if (failure.code === 'insufficient_funds') return new NoCapacityError(failure.message);
  if (failure.status === 401 || failure.status === 403 || failure.code === 'unauthorized_request') {
    return new BackendAuthenticationError(failure.message);
  }
  if (failure.status === 429) return new BackendRateLimitError(failure.message);
  return new BackendApiCallError(failure.message, {
    statusCode: failure.status,
    responseBody: failure.body.slice(0, 2000),
  });
}

const DEFAULT_TIMEOUT_MS = 60_000;
/** A token this close to its expiry is renewed first. */
const TOKEN_RENEW_MARGIN_MS = 30_000;

/** The Verda REST client of one API client (client id and secret). */
export class VerdaApi {
  readonly #baseUrl: string;
  readonly #options: VerdaApiOptions;
  #token: { accessToken: string; expiresAt: number } | undefined;

  constructor(options: VerdaApiOptions) {
    this.#baseUrl = (options.endpointUrl ?? VERDA_DEFAULT_ENDPOINT_URL).replace(/\/+$/, '');
    this.#options = options;
  }

  /** Whether Verda grants a token for the client credentials: false on 400/401, other failures thrown. */
  async acceptsCredentials(signal?: AbortSignal): Promise<boolean> {
    try {
      await this.#accessToken(signal, true);
      return true;
    } catch (error) {
      if (error instanceof VerdaApiFailure && (error.status === 400 || error.status === 401)) return false;
      throw error;
    }
  }

  listInstanceTypes(): Promise<VerdaInstanceType[]> {
    return this.#json('GET', '/instance-types') as Promise<VerdaInstanceType[]>;
  }

  listLocations(): Promise<Array<{ code: string; name: string; country_code: string }>> {
    return this.#json('GET', '/locations') as Promise<
      Array<{ code: string; name: string; country_code: string }>
    >;
  }

  /** `GET /instance-availability?isSpot=`: the types each location can launch now. */
  availabilities(isSpot: boolean): Promise<Array<{ location_code: string; availabilities: string[] }>> {
    return this.#json('GET', `/instance-availability?isSpot=${isSpot}`) as Promise<
      Array<{ location_code: string; availabilities: string[] }>
    >;
  }

  /** `POST /sshkeys`: the new key's id (Verda answers it as plain text). */
  createSshKey(name: string, key: string): Promise<string> {
    return this.#text('POST', '/sshkeys', { name, key });
  }

  async deleteSshKeys(ids: string[]): Promise<void> {
    await this.#text('DELETE', '/sshkeys', { keys: ids });
  }

  /** `POST /scripts`: the new startup script's id. */
  createStartupScript(name: string, script: string): Promise<string> {
    return this.#text('POST', '/scripts', { name, script });
  }

  async deleteStartupScripts(ids: string[]): Promise<void> {
    await this.#text('DELETE', '/scripts', { scripts: ids });
  }

  /** `POST /instances`: the new instance's id. */
  deployInstance(body: VerdaDeployRequest): Promise<string> {
    return this.#text('POST', '/instances', body);
  }

  listInstances(): Promise<VerdaInstance[]> {
    return this.#json('GET', '/instances') as Promise<VerdaInstance[]>;
  }

  /** `GET /instances/{id}`; null when Verda says the id is invalid or unknown. */
  async getInstance(id: string): Promise<VerdaInstance | null> {
    try {
      return (await this.#json('GET', `/instances/${encodeURIComponent(id)}`)) as VerdaInstance;
    } catch (error) {
      if (
        error instanceof VerdaApiFailure &&
        (error.status === 404 || error.apiMessage === 'Invalid instance id')
      ) {
        return null;
      }
      throw error;
    }
  }

  /** `PUT /instances {action: delete, id: [...], delete_permanently: true}`; failures thrown as `VerdaApiFailure`. */
  async deleteInstances(ids: string[]): Promise<void> {
    await this.#text('PUT', '/instances', { action: 'delete', id: ids, delete_permanently: true });
  }

  async #json(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<unknown> {
    const text = await this.#text(method, path, body);
    return text === '' ? null : JSON.parse(text);
  }

  /** The answer's text; a 401 gets a fresh token and one more try. */
  async #text(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<string> {
    try {
      return await this.#call(method, path, body, await this.#accessToken());
    } catch (error) {
      if (!(error instanceof VerdaApiFailure) || error.status !== 401) throw error;
      return this.#call(method, path, body, await this.#accessToken(undefined, true));
    }
  }

  async #accessToken(signal?: AbortSignal, renew = false): Promise<string> {
    if (!renew && this.#token && this.#token.expiresAt - TOKEN_RENEW_MARGIN_MS > Date.now()) {
      return this.#token.accessToken;
    }
    const text = await this.#call(
      'POST',
      '/oauth2/token',
      {
        grant_type: 'client_credentials',
        client_id: this.#options.clientId,
        client_secret: this.#options.clientSecret,
      },
      undefined,
      signal,
    );
    const answer = JSON.parse(text) as { access_token?: unknown; expires_in?: unknown };
    if (typeof answer.access_token !== 'string')
      throw new BackendApiCallError('Verda /oauth2/token: no access_token');
    const expiresIn = typeof answer.expires_in === 'number' ? answer.expires_in : 3600;
    this.#token = { accessToken: answer.access_token, expiresAt: Date.now() + expiresIn * 1000 };
    return answer.access_token;
  }

  async #call(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    body: unknown,
    accessToken: string | undefined,
    signal?: AbortSignal,
  ): Promise<string> {
    const what = `${method} ${path.split('?')[0]}`;
    let response: Dispatcher.ResponseData;
    try {
      response = await request(`${this.#baseUrl}${path}`, {
        method,
        headers: {
          accept: 'application/json',
          'user-agent': `dstack-ts-${this.#options.clientId.slice(0, 10)}`,
          ...(accessToken ? { authorization: `Bearer ${accessToken}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        dispatcher: this.#options.dispatcher,
        headersTimeout: this.#options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        bodyTimeout: this.#options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        signal,
      });
    } catch (error) {
      throw new BackendApiCallError(`Verda ${what} failed: ${(error as Error).message}`, {
        isRetryable: true,
        cause: error,
      });
    }
    const text = await response.body.text();
    if (response.statusCode >= 200 && response.statusCode < 300) return text;
    let code: string | undefined;
    let message = `HTTP ${response.statusCode}`;
    try {
      const parsed = JSON.parse(text) as { code?: unknown; message?: unknown };
      if (typeof parsed.code === 'string') code = parsed.code;
      if (typeof parsed.message === 'string') message = parsed.message;
    } catch {
      // Not Verda's JSON (a proxy's page): the status says it.
    }
    throw new VerdaApiFailure(what, response.statusCode, code, message, text);
  }
}
