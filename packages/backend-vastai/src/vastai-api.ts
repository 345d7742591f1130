/**
 * Vast.ai's REST API through undici: offer search (`POST /bundles/`), rental (`PUT /asks/{id}/`),
 * instance lookup (`GET /instances/{id}/`, `GET /instances/`) and destruction
 * (`DELETE /instances/{id}/`), with the API key as a bearer token. The base URL and the undici
 * dispatcher are settings, so tests point the real client at an emulator.
 */
import { BackendApiCallError } from '@dstack/core';
import { type Dispatcher, request } from 'undici';

/** One search filter: `{field: {op: value}}` with Vast's operators. */
export type VastAiFilterOperator = 'eq' | 'neq' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'notin';
export type VastAiSearchBody = Record<string, unknown>;

/** An ask of the offer book (`offers[]` of a search), the fields this backend reads. */
export interface VastAiOffer {
  id: number;
  machine_id?: number;
  gpu_name: string;
  num_gpus: number;
  /** MB of one GPU. */
  gpu_ram: number;
  cpu_cores: number | null;
  cpu_cores_effective: number;
  /** MB. */
  cpu_ram: number;
  /** GB. */
  disk_space: number;
  dph_base: number;
  dph_total?: number;
  /** $/GB/month. */
  storage_cost: number;
  min_bid?: number | null;
  geolocation?: string | null;
  [field: string]: unknown;
}

/** An instance (rental contract), the fields this backend reads. */
export interface VastAiInstance {
  id: number;
  label?: string | null;
  actual_status?: string | null;
  intended_status?: string | null;
  cur_state?: string | null;
  next_state?: string | null;
  status_msg?: string | null;
  public_ipaddr?: string | null;
  ports?: Record<string, Array<{ HostIp?: string; HostPort: string }>> | null;
  [field: string]: unknown;
}

/** `PUT /asks/{id}/`'s body (dstack's). */
export interface VastAiRentBody {
  client_id: 'me';
  image: string;
  /** The spot bid ($/h); null for on-demand. */
  price: number | null;
  /** GB. */
  disk: number;
  label: string;
  /** `KEY: value` variables, and docker options as keys (`"-p 10022:10022": "1"`). */
  env: Record<string, string>;
  user: string;
  onstart: string;
  args: string[];
  runtype: 'args';
  image_login: string | null;
  python_utf8: boolean;
  lang_utf8: boolean;
  use_jupyter_lab: boolean;
  jupyter_dir: string | null;
  create_from: string | null;
  force: boolean;
}

/** What a rental answered: the contract, and whether Vast calls it a success. */
export interface VastAiRentResult {
  success: boolean;
  /** The instance id; Vast creates a stopped one even for a bid it refuses. */
  newContract: number | null;
  error: string | null;
  message: string | null;
}

export interface VastAiApiOptions {
  /** The console's root, e.g. `https://console.vast.ai`; paths are under its `/api/v0`. */
  endpointUrl: string;
  /** Sent as `Authorization: Bearer`; search needs none. */
  apiKey?: string;
  /** Where requests go (tests: an emulator's or a MockAgent). Default undici's global dispatcher. */
  dispatcher?: Dispatcher;
  /** Per-request limit on headers and body, in milliseconds. Default 10 000 (gpuhunt's). */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;

interface Answer {
  status: number;
  body: unknown;
  text: string;
}

/** The Vast.ai REST client of one API key. */
export class VastAiApi {
  readonly #baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #dispatcher: Dispatcher | undefined;
  readonly #timeoutMs: number;

  constructor(options: VastAiApiOptions) {
    this.#baseUrl = `${options.endpointUrl.replace(/\/+$/, '')}/api/v0`;
    this.#apiKey = options.apiKey;
    this.#dispatcher = options.dispatcher;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** The offers matching the search body (`POST /bundles/`). */
  async searchOffers(body: VastAiSearchBody, signal?: AbortSignal): Promise<VastAiOffer[]> {
    const answer = await this.#call('POST', '/bundles/', body, signal);
    this.#expectOk(answer, 'POST /bundles/');
    const offers = (answer.body as { offers?: unknown } | null)?.offers;
    if (!Array.isArray(offers)) throw this.#unexpected('POST /bundles/', answer, 'expected {offers: [...]}');
    return offers as VastAiOffer[];
  }

  /**
   * Rents ask `askId` (`PUT /asks/{id}/`). Answers Vast's refusals as a result (the ask gone,
   * a low bid) rather than throwing; throws `BackendApiCallError` for other failures.
   */
  async rent(askId: number | string, body: VastAiRentBody): Promise<VastAiRentResult & { status: number }> {
    const path = `/asks/${encodeURIComponent(String(askId))}/`;
    const answer = await this.#call('PUT', path, body);
    const reply = (answer.body ?? {}) as {
      success?: unknown;
      new_contract?: unknown;
      error?: unknown;
      msg?: unknown;
      message?: unknown;
    };
    const result = {
      status: answer.status,
      success: reply.success === true,
      newContract: typeof reply.new_contract === 'number' ? reply.new_contract : null,
      error: typeof reply.error === 'string' ? reply.error : null,
      message:
        typeof reply.msg === 'string' ? reply.msg : typeof reply.message === 'string' ? reply.message : null,
    };
    if (answer.status >= 200 && answer.status < 300) return result;
    if (
      result.error !== null &&
      answer.status < 500 &&
      answer.status !== 401 &&
      answer.status !== 403 &&
      answer.status !== 429
    )
      return result;
    throw this.#failure(`PUT ${path}`, answer);
  }

  /** The instance, or null when Vast does not know it (`{"instances": null}` or 404). */
  async getInstance(instanceId: string): Promise<VastAiInstance | null> {
    const path = `/instances/${encodeURIComponent(instanceId)}/?owner=me`;
    const answer = await this.#call('GET', path);
    if (answer.status === 404) return null;
    this.#expectOk(answer, `GET /instances/${instanceId}/`);
    const instance = (answer.body as { instances?: unknown } | null)?.instances;
    if (instance === null || instance === undefined) return null;
    if (typeof instance !== 'object' || Array.isArray(instance))
      throw this.#unexpected(`GET /instances/${instanceId}/`, answer, 'expected {instances: {...}}');
    return instance as VastAiInstance;
  }

  /** Every instance of the account (`GET /instances/?owner=me`). */
  async listInstances(): Promise<VastAiInstance[]> {
    const answer = await this.#call('GET', '/instances/?owner=me');
    this.#expectOk(answer, 'GET /instances/');
    const instances = (answer.body as { instances?: unknown } | null)?.instances;
    if (!Array.isArray(instances))
      throw this.#unexpected('GET /instances/', answer, 'expected {instances: [...]}');
    return instances as VastAiInstance[];
  }

  /** Destroys the instance; false when Vast does not know it (`no_such_instance`). */
  async destroyInstance(instanceId: string): Promise<boolean> {
    const path = `/instances/${encodeURIComponent(instanceId)}/`;
    const answer = await this.#call('DELETE', path);
    const reply = (answer.body ?? {}) as { success?: unknown; error?: unknown };
    if (reply.error === 'no_such_instance' || answer.status === 404) return false;
    this.#expectOk(answer, `DELETE ${path}`);
    if (reply.success === false) throw this.#failure(`DELETE ${path}`, answer);
    return true;
  }

  /** The key's user (`GET /users/current/`): the read-only call that checks a key. */
  async currentUser(signal?: AbortSignal): Promise<{ status: number; user: Record<string, unknown> | null }> {
    const answer = await this.#call('GET', '/users/current/', undefined, signal);
    if (answer.status === 401 || answer.status === 403) return { status: answer.status, user: null };
    this.#expectOk(answer, 'GET /users/current/');
    return { status: answer.status, user: (answer.body ?? {}) as Record<string, unknown> };
  }

  async #call(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    path: string,
    body?: unknown,
    signal?: AbortSignal,
  ): Promise<Answer> {
    const url = `${this.#baseUrl}${path}`;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Dispatcher.ResponseData;
    try {
      response = await request(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        dispatcher: this.#dispatcher,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
        signal,
      });
    } catch (error) {
      throw new BackendApiCallError(`Vast.ai ${method} ${path.split('?')[0]} failed: ${describe(error)}`, {
        url: redact(url),
        isRetryable: true,
        cause: error,
      });
    }
    const text = await response.body.text();
    let parsed: unknown = null;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      // Vast answers some errors (429) in plain text.
    }
    return { status: response.statusCode, body: parsed, text };
  }

  #expectOk(answer: Answer, what: string): void {
    if (answer.status < 200 || answer.status >= 300) throw this.#failure(what, answer);
  }

  #failure(what: string, answer: Answer): BackendApiCallError {
    const reply = (answer.body ?? {}) as { msg?: unknown; message?: unknown; error?: unknown };
    const reason =
      (typeof reply.msg === 'string' && reply.msg) ||
      (typeof reply.message === 'string' && reply.message) ||
      (typeof reply.error === 'string' && reply.error) ||
      answer.text.slice(0, 200) ||
      'no details';
    return new BackendApiCallError(`Vast.ai ${what} answered ${answer.status}: ${reason}`, {
      statusCode: answer.status,
      isRetryable: answer.status === 429 || answer.status >= 500,
      responseBody: answer.text.slice(0, 2000),
    });
  }

  #unexpected(what: string, answer: Answer, expected: string): BackendApiCallError {
    return new BackendApiCallError(`Vast.ai ${what} gave an unexpected answer: ${expected}`, {
      statusCode: answer.status,
      responseBody: answer.text.slice(0, 2000),
    });
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The URL without its query (the legacy `api_key=` would be there). */
function redact(url: string): string {
  return url.split('?')[0] ?? url;
}
