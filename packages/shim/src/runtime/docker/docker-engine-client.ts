import { Pool } from 'undici';

/** The oldest Engine API this runtime speaks: `DeviceRequests` (GPUs) arrived in 1.40. */
export const MINIMUM_DOCKER_API_VERSION = '1.40';
/** The newest Engine API this runtime was written against; newer daemons still serve it. */
export const MAXIMUM_DOCKER_API_VERSION = '1.47';

export const DEFAULT_DOCKER_SOCKET_PATH = '/var/run/docker.sock';

/** A Docker Engine API call that answered with an error status; `dockerMessage` is Docker's own text. */
export class DockerEngineError extends Error {
  constructor(
    readonly statusCode: number,
    readonly dockerMessage: string,
    readonly method: string,
    readonly path: string,
  ) {
    super(`Docker ${method} ${path} failed with ${statusCode}: ${dockerMessage}`);
    this.name = 'DockerEngineError';
  }

  static isNotFound(error: unknown): boolean {
    return error instanceof DockerEngineError && error.statusCode === 404;
  }
}

export interface DockerRequest {
  method: 'GET' | 'POST' | 'DELETE';
  /** The path after the version prefix, e.g. `/containers/create`. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /** Waits on the daemon with no header or body timeout (`/containers/{id}/wait`, pulls). */
  longPoll?: boolean;
}

export interface DockerResponse {
  statusCode: number;
  body: Buffer;
}

export interface DockerEngineClientOptions {
  /**
   * The daemon's unix socket.
   * Default: the path in `DOCKER_HOST` when it is `unix://…`, else `/var/run/docker.sock`.
   */
  socketPath?: string;
}

/** Reads the socket path from `DOCKER_HOST` (only `unix://` hosts are supported). */
export function resolveDockerSocketPath(
  socketPath: string | undefined,
  environment: NodeJS.ProcessEnv = process.env,
): string {
  if (socketPath !== undefined) return socketPath;
  const dockerHost = environment.DOCKER_HOST;
  if (dockerHost === undefined || dockerHost === '') return DEFAULT_DOCKER_SOCKET_PATH;
  if (!dockerHost.startsWith('unix://')) {
    throw new Error(`DOCKER_HOST=${dockerHost} is not supported: only unix:// sockets are`);
  }
  return dockerHost.slice('unix://'.length);
}

/** Compares dotted API versions ("1.41" < "1.47"). */
export function compareApiVersions(left: string, right: string): number {
  const leftParts = left.split('.').map(Number);
  const rightParts = right.split('.').map(Number);
  for (let index = 0; index < Math.max(leftParts.length, rightParts.length); index++) {
    const difference = (leftParts[index] ?? 0) - (rightParts[index] ?? 0);
    if (difference !== 0) return Math.sign(difference);
  }
  return 0;
}

/**
 * A minimal Docker Engine API client over the daemon's unix socket. The API version is
 * negotiated once with `GET /version`: the daemon's own version, capped at the newest one this
 * code knows.
 */
export class DockerEngineClient {
  readonly socketPath: string;
  // A pool, not a single connection: `/containers/{id}/wait` holds its connection until the
  // container exits, and other calls must not queue behind it.
  readonly #pool: Pool;
  #apiVersion: Promise<string> | undefined;

  constructor(options: DockerEngineClientOptions = {}) {
    this.socketPath = resolveDockerSocketPath(options.socketPath);
    this.#pool = new Pool('http://localhost', { socketPath: this.socketPath, connections: 16 });
  }

  /** The negotiated API version, e.g. `1.41`. */
  apiVersion(): Promise<string> {
    this.#apiVersion ??= this.#negotiateApiVersion().catch((error: unknown) => {
      // Let the next call try again (the daemon may be starting).
      this.#apiVersion = undefined;
      throw error;
    });
    return this.#apiVersion;
  }

  async #negotiateApiVersion(): Promise<string> {
    const response = await this.#send({ method: 'GET', path: '/version' }, '');
    const version = JSON.parse(response.body.toString('utf8')) as { ApiVersion?: string };
    const daemonVersion = version.ApiVersion;
    if (daemonVersion === undefined) throw new Error('the Docker daemon did not report its API version');
    if (compareApiVersions(daemonVersion, MINIMUM_DOCKER_API_VERSION) < 0) {
      throw new Error(
        `the Docker daemon speaks API ${daemonVersion}; at least ${MINIMUM_DOCKER_API_VERSION} is needed`,
      );
    }
    return compareApiVersions(daemonVersion, MAXIMUM_DOCKER_API_VERSION) > 0
      ? MAXIMUM_DOCKER_API_VERSION
      : daemonVersion;
  }

  /** Sends a request; a status of 400 or more throws {@link DockerEngineError}. */
  async request(request: DockerRequest): Promise<DockerResponse> {
    return this.#send(request, `/v${await this.apiVersion()}`);
  }

  /** Sends a request and parses its JSON answer. */
  async requestJson<T>(request: DockerRequest): Promise<T> {
    const response = await this.request(request);
    return JSON.parse(response.body.toString('utf8')) as T;
  }

  async #send(request: DockerRequest, versionPrefix: string): Promise<DockerResponse> {
    const path = `${versionPrefix}${request.path}${formatQuery(request.query)}`;
    const headers: Record<string, string> = { ...request.headers };
    let body: string | undefined;
    if (request.body !== undefined) {
      body = JSON.stringify(request.body);
      headers['content-type'] = 'application/json';
    }
    const response = await this.#pool.request({
      method: request.method,
      path,
      headers,
      body,
      ...(request.longPoll === true ? { headersTimeout: 0, bodyTimeout: 0 } : {}),
    });
    const responseBody = Buffer.from(await response.body.arrayBuffer());
    if (response.statusCode >= 400) {
      throw new DockerEngineError(
        response.statusCode,
        readDockerMessage(responseBody),
        request.method,
        request.path,
      );
    }
    return { statusCode: response.statusCode, body: responseBody };
  }

  /** Closes the connections to the daemon; pending long polls are aborted. */
  async close(): Promise<void> {
    await this.#pool.destroy();
  }
}

function formatQuery(query: DockerRequest['query']): string {
  if (query === undefined) return '';
  const parameters = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined) parameters.set(key, String(value));
  }
  const text = parameters.toString();
  return text === '' ? '' : `?${text}`;
}

/** Docker answers errors as `{"message": "..."}`; anything else is passed on as text. */
function readDockerMessage(body: Buffer): string {
  const text = body.toString('utf8').trim();
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    if (typeof parsed.message === 'string') return parsed.message;
  } catch {
    // Not JSON: use the raw text.
  }
  return text;
}
