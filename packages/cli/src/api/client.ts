/**
 * `DstackApiClient`: one method per server endpoint the CLI uses. Requests and answers are the
 * API models of `@dstack/core` (answers are validated with them); failures become the errors of
 * `api-errors.ts`.
 */

import type { Socket } from 'node:net';
import type {
  ApplyFleetRequestSchema,
  ApplyRunRequestSchema,
  CreateOrUpdateSecretRequestSchema,
  DeleteFleetsRequestSchema,
  DeleteRunsRequestSchema,
  DeleteSecretsRequestSchema,
  Event,
  FileArchive,
  Fleet,
  Gateway,
  GatewayConfiguration,
  GatewayPlan,
  GatewaySpec,
  GetOffersRequestSchema,
  GetRunPlanRequestSchema,
  InitRepoRequestSchema,
  InstanceOfferWithAvailability,
  JobMetrics,
  JobMetricsRequestSchema,
  ListEventsRequestSchema,
  ListRunsRequestSchema,
  PollLogsRequestSchema,
  PollLogsResponseSchema,
  Project,
  RepoHead,
  Run,
  RunPlan,
  Secret,
  StopRunsRequestSchema,
  StreamLogsRequestSchema,
  User,
  Volume,
  VolumeConfiguration,
} from '@dstack/core';
import type { Dispatcher } from 'undici';
import { afterIoPoll } from './after-io-poll.js';
import { type FilePart, type HttpAnswer, httpPost } from './http-post.js';
import type { LogStreamLines } from './log-stream-lines.js';
import {
  InvalidTokenError,
  isHeadersTimeout,
  isResourceMissing,
  isTokenRejected,
  isUnreachableError,
  ServerApiError,
  ServerTimeoutError,
  ServerUnreachableError,
  UnexpectedResponseError,
} from './server-errors.js';

/** dstack's upload body: the file in the part `file`, named by its sha256. */
function fileForm(hash: string, bytes: Uint8Array): FilePart {
  return { filename: hash, bytes };
}

/**
 * How the CLI checks an answer: without zod's JIT, which compiles a parser for an object schema
 * the first time it parses one (`new Function`, in no code cache) and pays for it over many
 * parses. A CLI process parses an answer once: `dstack apply` spent some 15 ms of CPU compiling.
 */
const PARSE_ONCE = { jitless: true } as const;

/** A zod schema, seen only through what the CLI needs (the CLI does not depend on zod). */
interface Schema<Output> {
  safeParse(
    value: unknown,
    context?: typeof PARSE_ONCE,
  ): { success: true; data: Output } | { success: false; error: Error };
  _zod: { input: unknown; output: Output };
}
type RequestBody<S extends { _zod: { input: unknown } }> = S['_zod']['input'];

/**
 * Loads the schema an answer is checked with. The schemas load per endpoint group (`answers/`)
 * when a request is sent, not with the client: zod builds a schema when its module loads, and
 * `dstack ps` would otherwise build every answer's schema to read runs.
 */
type SchemaLoader<Output> = () => Promise<Schema<Output>>;

const RUN: SchemaLoader<Run> = async () => (await import('./answers/runs.js')).RunSchema;
const RUNS: SchemaLoader<Run[]> = async () => (await import('./answers/runs.js')).RunSchema.array();
const RUN_PLAN: SchemaLoader<RunPlan> = async () => (await import('./answers/runs.js')).RunPlanSchema;
const VOLUME: SchemaLoader<Volume> = async () => (await import('./answers/volumes.js')).VolumeSchema;
const VOLUMES: SchemaLoader<Volume[]> = async () =>
  (await import('./answers/volumes.js')).VolumeSchema.array();
const GATEWAY: SchemaLoader<Gateway> = async () => (await import('./answers/gateways.js')).GatewaySchema;
const SECRET: SchemaLoader<Secret> = async () => (await import('./answers/secrets.js')).SecretSchema;

export type GetRunPlanRequest = RequestBody<typeof GetRunPlanRequestSchema>;
export type ApplyRunRequest = RequestBody<typeof ApplyRunRequestSchema>;
export type InitRepoRequest = RequestBody<typeof InitRepoRequestSchema>;
export type ListRunsRequest = RequestBody<typeof ListRunsRequestSchema>;
export type ListEventsRequest = RequestBody<typeof ListEventsRequestSchema>;
export type StopRunsRequest = RequestBody<typeof StopRunsRequestSchema>;
export type DeleteRunsRequest = RequestBody<typeof DeleteRunsRequestSchema>;
export type PollLogsRequest = RequestBody<typeof PollLogsRequestSchema>;
export type JobMetricsRequest = RequestBody<typeof JobMetricsRequestSchema>;
export type PollLogsResponse = (typeof PollLogsResponseSchema)['_zod']['output'];
export type StreamLogsRequest = RequestBody<typeof StreamLogsRequestSchema>;
export type GetOffersRequest = RequestBody<typeof GetOffersRequestSchema>;
export type ApplyFleetRequest = RequestBody<typeof ApplyFleetRequestSchema>;
export type DeleteFleetsRequest = RequestBody<typeof DeleteFleetsRequestSchema>;
export type CreateOrUpdateSecretRequest = RequestBody<typeof CreateOrUpdateSecretRequestSchema>;
export type DeleteSecretsRequest = RequestBody<typeof DeleteSecretsRequestSchema>;

export interface OffersResponse {
  offers: InstanceOfferWithAvailability[];
  total_offers: number;
  /** Backends whose offers are missing (failed, or slower than the server's deadline). */
  warnings: string[];
}

export interface DstackApiClientOptions {
  /** The server URL, e.g. `http://127.0.0.1:3000`. */
  url: string;
  /** The user's token, sent as `Authorization: Bearer <token>`. */
  token: string;
  /** The project of `/api/project/{project}/...` endpoints. */
  projectName: string;
  /** The undici dispatcher (a `MockAgent` in tests). Default: undici's global dispatcher. */
  dispatcher?: Dispatcher;
  /**
   * Milliseconds to wait for an answer's headers; then the request fails with
   * `ServerTimeoutError`. A stream's body (logs, SSH) is not limited by it. Default 30 000 (the
   * CLI takes it from `DSTACK_CLI_TIMEOUT`, in seconds).
   */
  timeoutMs?: number;
  /** Shown while an answer takes longer than `WAIT_NOTICE_DELAY_MS`. Default: none. */
  waitNotice?: WaitNotice;
}

/** Tells the user that the CLI is waiting for the server, and that it no longer is. */
export interface WaitNotice {
  show(): void;
  hide(): void;
}

/** How long the CLI waits for a server's answer by default. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** An answer slower than this shows the wait notice: a second is when silence starts to worry. */
export const WAIT_NOTICE_DELAY_MS = 1_000;

export interface RequestOptions {
  /** Aborts the request (e.g. Ctrl-C while attached). */
  signal?: AbortSignal;
}

/** Silence after which a log stream counts as dead (the server's heartbeat comes every 15 s). */
const LOG_STREAM_SILENCE_LIMIT_MS = 60_000;

function isFilePart(body: unknown): body is FilePart {
  return typeof body === 'object' && body !== null && (body as FilePart).bytes instanceof Uint8Array;
}

export class DstackApiClient {
  readonly url: string;
  readonly projectName: string;
  readonly #token: string;
  readonly #dispatcher: Dispatcher | undefined;
  readonly #timeoutMs: number;
  readonly #waitNotice: WaitNotice | undefined;
  /** Requests past `WAIT_NOTICE_DELAY_MS` without an answer; the notice shows while there are any. */
  #slowAnswers = 0;

  constructor(options: DstackApiClientOptions) {
    this.url = options.url.replace(/\/+$/, '');
    this.projectName = options.projectName;
    this.#token = options.token;
    this.#dispatcher = options.dispatcher;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#waitNotice = options.waitNotice;
  }

  getServerInfo(options?: RequestOptions): Promise<{ server_version: string | null }> {
    return this.#post(
      '/api/server/get_info',
      {},
      async () => (await import('./answers/users.js')).ServerInfoSchema,
      options,
    );
  }

  listProjects(options?: RequestOptions): Promise<Project[]> {
    return this.#post(
      '/api/projects/list',
      {},
      async () => (await import('./answers/users.js')).ProjectSchema.array(),
      options,
    );
  }

  getMyUser(options?: RequestOptions): Promise<User> {
    return this.#post(
      '/api/users/get_my_user',
      {},
      async () => (await import('./answers/users.js')).UserSchema,
      options,
    );
  }

  getRunPlan(body: GetRunPlanRequest, options?: RequestOptions): Promise<RunPlan> {
    return this.#post(this.#projectPath('runs/get_plan'), body, RUN_PLAN, options);
  }

  applyRun(body: ApplyRunRequest, options?: RequestOptions): Promise<Run> {
    return this.#post(this.#projectPath('runs/apply'), body, RUN, options);
  }

  getRun(runName: string, options?: RequestOptions): Promise<Run> {
    return this.#post(this.#projectPath('runs/get'), { run_name: runName }, RUN, options);
  }

  /** Runs of this client's project (`project_name` defaults to it). */
  listRuns(body: ListRunsRequest, options?: RequestOptions): Promise<Run[]> {
    return this.#post('/api/runs/list', { project_name: this.projectName, ...body }, RUNS, options);
  }

  async stopRuns(body: StopRunsRequest, options?: RequestOptions): Promise<void> {
    await this.#post(this.#projectPath('runs/stop'), body, undefined, options);
  }

  async deleteRuns(body: DeleteRunsRequest, options?: RequestOptions): Promise<void> {
    await this.#post(this.#projectPath('runs/delete'), body, undefined, options);
  }

  /** dstack's `metrics/job/{run_name}`: the job's resource samples as series, latest first. */
  getJobMetrics(runName: string, body: JobMetricsRequest, options?: RequestOptions): Promise<JobMetrics> {
    return this.#post(
      this.#projectPath(`metrics/job/${encodeURIComponent(runName)}`),
      body,
      async () => (await import('./answers/metrics.js')).JobMetricsSchema,
      options,
    );
  }

  pollLogs(body: PollLogsRequest, options?: RequestOptions): Promise<PollLogsResponse> {
    return this.#post(
      this.#projectPath('logs/poll'),
      body,
      async () => (await import('./answers/logs.js')).PollLogsResponseSchema,
      options,
    );
  }

  /**
   * Opens `logs/stream` (newline-delimited JSON). Fails like every request before the first
   * line (a server without the endpoint answers 404); the lines then come as they are sent.
   */
  async streamLogs(body: StreamLogsRequest, options: RequestOptions = {}): Promise<LogStreamLines> {
    const endpoint = this.#projectPath('logs/stream');
    const response = await this.#send(endpoint, body, options, {
      accept: 'application/x-ndjson',
      // The server sends a heartbeat every 15 s: a minute of silence means a dead connection.
      bodyTimeout: LOG_STREAM_SILENCE_LIMIT_MS,
    });
    const { readLogStreamLines } = await import('./log-stream-lines.js');
    return readLogStreamLines(response.body, endpoint);
  }

  async listOffers(body: GetOffersRequest, options?: RequestOptions): Promise<OffersResponse> {
    const endpoint = this.#projectPath('offers/list');
    const answer = (await this.#post(endpoint, body, undefined, options)) as {
      offers?: unknown;
      total_offers?: unknown;
      warnings?: unknown;
    } | null;
    const { InstanceOfferWithAvailabilitySchema } = await import('./answers/offers.js');
    const offers = InstanceOfferWithAvailabilitySchema.array().safeParse(answer?.offers, PARSE_ONCE);
    // Older servers send no warnings.
    const warnings = Array.isArray(answer?.warnings)
      ? answer.warnings.filter((warning): warning is string => typeof warning === 'string')
      : [];
    if (!offers.success || typeof answer?.total_offers !== 'number') {
      throw new UnexpectedResponseError(
        `unexpected answer from ${endpoint}: expected {offers, total_offers}`,
      );
    }
    return {
      offers: offers.data,
      total_offers: answer.total_offers,
      warnings,
    };
  }

  listFleets(options?: RequestOptions): Promise<Fleet[]> {
    return this.#post(
      this.#projectPath('fleets/list'),
      {},
      async () => (await import('./answers/fleets.js')).FleetSchema.array(),
      options,
    );
  }

  applyFleet(body: ApplyFleetRequest, options?: RequestOptions): Promise<Fleet> {
    return this.#post(
      this.#projectPath('fleets/apply'),
      body,
      async () => (await import('./answers/fleets.js')).FleetSchema,
      options,
    );
  }

  async deleteFleets(body: DeleteFleetsRequest, options?: RequestOptions): Promise<void> {
    await this.#post(this.#projectPath('fleets/delete'), body, undefined, options);
  }

  /** Events the user may see (`/api/events/list`), filtered and paged as dstack's. */
  listEvents(body: ListEventsRequest, options?: RequestOptions): Promise<Event[]> {
    return this.#post(
      '/api/events/list',
      body,
      async () => (await import('./answers/events.js')).EventSchema.array(),
      options,
    );
  }

  /** The gateway's id, for event filters (`gateways/get`). */
  async getGatewayId(name: string, options?: RequestOptions): Promise<string> {
    const gateway = (await this.#post(this.#projectPath('gateways/get'), { name }, undefined, options)) as {
      id?: unknown;
    } | null;
    if (typeof gateway?.id !== 'string') {
      throw new UnexpectedResponseError('unexpected answer from gateways/get: expected a gateway with an id');
    }
    return gateway.id;
  }

  listVolumes(options?: RequestOptions): Promise<Volume[]> {
    return this.#post(this.#projectPath('volumes/list'), {}, VOLUMES, options);
  }

  /** The volume, or null when the project has none of that name. */
  async getVolume(name: string, options?: RequestOptions): Promise<Volume | null> {
    try {
      return await this.#post(this.#projectPath('volumes/get'), { name }, VOLUME, options);
    } catch (error) {
      if (error instanceof ServerApiError && isResourceMissing(error.details)) return null;
      throw error;
    }
  }

  createVolume(configuration: VolumeConfiguration, options?: RequestOptions): Promise<Volume> {
    return this.#post(this.#projectPath('volumes/create'), { configuration }, VOLUME, options);
  }

  async deleteVolumes(names: readonly string[], options?: RequestOptions): Promise<void> {
    await this.#post(this.#projectPath('volumes/delete'), { names }, undefined, options);
  }

  listGateways(options?: RequestOptions): Promise<Gateway[]> {
    return this.#post(
      this.#projectPath('gateways/list'),
      {},
      async () => (await import('./answers/gateways.js')).GatewaySchema.array(),
      options,
    );
  }

  /** The gateway, or null when the project has none of that name. */
  async getGateway(name: string, options?: RequestOptions): Promise<Gateway | null> {
    try {
      return await this.#post(this.#projectPath('gateways/get'), { name }, GATEWAY, options);
    } catch (error) {
      if (error instanceof ServerApiError && isResourceMissing(error.details)) return null;
      throw error;
    }
  }

  /** dstack's `gateways/get_plan`: the gateway of the spec's name, and whether it changes in place. */
  getGatewayPlan(spec: GatewaySpec, options?: RequestOptions): Promise<GatewayPlan> {
    return this.#post(
      this.#projectPath('gateways/get_plan'),
      { spec },
      async () => (await import('./answers/gateways.js')).GatewayPlanSchema,
      options,
    );
  }

  /** dstack's `gateways/apply`: creates the gateway, or updates `current` (the plan's) in place. */
  applyGatewayPlan(spec: GatewaySpec, current: Gateway | null, options?: RequestOptions): Promise<Gateway> {
    return this.#post(
      this.#projectPath('gateways/apply'),
      { plan: { spec, current_resource: current }, force: false },
      GATEWAY,
      options,
    );
  }

  createGateway(configuration: GatewayConfiguration, options?: RequestOptions): Promise<Gateway> {
    return this.#post(this.#projectPath('gateways/create'), { configuration }, GATEWAY, options);
  }

  async deleteGateways(names: readonly string[], options?: RequestOptions): Promise<void> {
    await this.#post(this.#projectPath('gateways/delete'), { names }, undefined, options);
  }

  async setDefaultGateway(name: string, options?: RequestOptions): Promise<void> {
    await this.#post(this.#projectPath('gateways/set_default'), { name }, undefined, options);
  }

  setGatewayWildcardDomain(name: string, wildcardDomain: string, options?: RequestOptions): Promise<Gateway> {
    return this.#post(
      this.#projectPath('gateways/set_wildcard_domain'),
      { name, wildcard_domain: wildcardDomain },
      GATEWAY,
      options,
    );
  }

  /** Records the repo (and how the runner reaches it) before a run with it is applied (`repos/init`). */
  async initRepo(body: InitRepoRequest, options?: RequestOptions): Promise<void> {
    await this.#post(this.#projectPath('repos/init'), body, undefined, options);
  }

  /**
   * The repo with the caller's creds for it (`repos/get` with `include_creds`), or null when the
   * project has no such repo.
   */
  async getRepoWithCreds(repoId: string, options?: RequestOptions): Promise<RepoHead | null> {
    try {
      return await this.#post(
        this.#projectPath('repos/get'),
        { repo_id: repoId, include_creds: true },
        async () => (await import('./answers/code.js')).RepoHeadSchema,
        options,
      );
    } catch (error) {
      if (
        ServerApiError.isInstance(error) &&
        error.details.some((detail) => detail.code === 'resource_not_exists')
      )
        return null;
      throw error;
    }
  }

  /** Uploads the repo's code, named by its sha256 (`repos/upload_code`; the server keeps one copy per content). */
  async uploadCode(
    repoId: string,
    codeHash: string,
    bytes: Uint8Array,
    options?: RequestOptions,
  ): Promise<void> {
    const endpoint = `${this.#projectPath('repos/upload_code')}?repo_id=${encodeURIComponent(repoId)}`;
    await this.#post(endpoint, fileForm(codeHash, bytes), undefined, options);
  }

  /** Uploads a `files:` archive, named by its sha256 (`files/upload_archive`); answers its id. */
  uploadArchive(hash: string, bytes: Uint8Array, options?: RequestOptions): Promise<FileArchive> {
    return this.#post(
      '/api/files/upload_archive',
      fileForm(hash, bytes),
      async () => (await import('./answers/code.js')).FileArchiveSchema,
      options,
    );
  }

  /** The project's secrets, names only (`value` is null). */
  listSecrets(options?: RequestOptions): Promise<Secret[]> {
    return this.#post(
      this.#projectPath('secrets/list'),
      {},
      async () => (await import('./answers/secrets.js')).SecretSchema.array(),
      options,
    );
  }

  /** One secret with its value (project admins). */
  getSecret(name: string, options?: RequestOptions): Promise<Secret> {
    return this.#post(this.#projectPath('secrets/get'), { name }, SECRET, options);
  }

  createOrUpdateSecret(body: CreateOrUpdateSecretRequest, options?: RequestOptions): Promise<Secret> {
    return this.#post(this.#projectPath('secrets/create_or_update'), body, SECRET, options);
  }

  async deleteSecrets(body: DeleteSecretsRequest, options?: RequestOptions): Promise<void> {
    await this.#post(this.#projectPath('secrets/delete'), body, undefined, options);
  }

  /**
   * Opens an SSH connection to a job of a run through the server (`/proxy/ssh`): the socket
   * speaks SSH-2 to the job's runner. Refusals throw like every request.
   */
  openSshTunnel(
    runName: string,
    options: { jobNum?: number; replicaNum?: number } & RequestOptions = {},
  ): Promise<Socket> {
    return this.#awaitAnswer(
      import('./ssh-tunnel.js').then(({ openSshTunnel }) =>
        openSshTunnel({
          serverUrl: this.url,
          token: this.#token,
          projectName: this.projectName,
          runName,
          timeoutMs: this.#timeoutMs,
          ...options,
        }),
      ),
    );
  }

  /** `answer`, with the wait notice shown while it is slower than `WAIT_NOTICE_DELAY_MS`. */
  async #awaitAnswer<T>(answer: Promise<T>): Promise<T> {
    const notice = this.#waitNotice;
    if (!notice) return answer;
    let slow = false;
    const timer = setTimeout(() => {
      slow = true;
      if (this.#slowAnswers++ === 0) notice.show();
    }, WAIT_NOTICE_DELAY_MS);
    try {
      return await answer;
    } finally {
      clearTimeout(timer);
      if (slow && --this.#slowAnswers === 0) notice.hide();
    }
  }

  #projectPath(endpoint: string): string {
    return `/api/project/${encodeURIComponent(this.projectName)}/${endpoint}`;
  }

  async #post<Output>(
    endpoint: string,
    body: unknown,
    loadSchema: SchemaLoader<Output> | undefined,
    options: RequestOptions = {},
  ): Promise<Output> {
    // The schema's module loads while the server works on the request.
    const loading = loadSchema && afterIoPoll(loadSchema);
    loading?.catch(() => undefined);
    const response = await this.#send(endpoint, body, options);
    const text = await response.body.text();
    let json: unknown = null;
    if (text.trim() !== '') {
      try {
        json = JSON.parse(text);
      } catch {
        throw new UnexpectedResponseError(`unexpected answer from ${endpoint}: not JSON`);
      }
    }
    if (!loading) return json as Output;
    const parsed = (await loading).safeParse(json, PARSE_ONCE);
    if (!parsed.success) {
      throw new UnexpectedResponseError(`unexpected answer from ${endpoint}: ${parsed.error.message}`, {
        cause: parsed.error,
      });
    }
    return parsed.data;
  }

  /** POSTs `body`; answers other than 2xx become errors (their body read), 2xx ones are returned unread. */
  async #send(
    endpoint: string,
    body: unknown,
    options: RequestOptions,
    extra: { accept?: string; bodyTimeout?: number } = {},
  ): Promise<HttpAnswer> {
    let response: HttpAnswer;
    const upload = isFilePart(body);
    try {
      response = await this.#awaitAnswer(
        httpPost(`${this.url}${endpoint}`, {
          headers: {
            authorization: `Bearer ${this.#token}`,
            // An upload sets its own multipart content type, boundary included.
            ...(upload ? {} : { 'content-type': 'application/json' }),
            accept: extra.accept ?? 'application/json',
          },
          body: upload ? body : JSON.stringify(body),
          headersTimeoutMs: this.#timeoutMs,
          ...(extra.bodyTimeout === undefined ? {} : { bodyTimeoutMs: extra.bodyTimeout }),
          ...(options.signal ? { signal: options.signal } : {}),
          ...(this.#dispatcher ? { dispatcher: this.#dispatcher } : {}),
        }),
      );
    } catch (error) {
      if (isUnreachableError(error)) throw new ServerUnreachableError(this.url, error);
      if (isHeadersTimeout(error)) throw new ServerTimeoutError(this.url, this.#timeoutMs, error);
      throw error;
    }
    if (response.statusCode >= 200 && response.statusCode < 300) return response;
    const text = await response.body.text();
    const { parseErrorDetails } = await import('./api-errors.js');
    const details = parseErrorDetails(response.statusCode, text);
    if (isTokenRejected(response.statusCode, details))
      throw new InvalidTokenError(this.url, this.projectName);
    throw new ServerApiError(endpoint, response.statusCode, details);
  }
}
