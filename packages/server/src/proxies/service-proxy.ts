/**
 * dstack's in-server service proxy (services without a gateway):
 * `/proxy/services/{project}/{run}/{path…}` → a running replica of the service, on its `port`.
 * Any method; bodies stream both ways untouched; the query string is kept. A dstack token of
 * a project member is required unless the service says `auth: false`.
 *
 * Protocol upgrades (WebSocket: Jupyter, Gradio, realtime APIs) go the same way: the replica's
 * 101 reaches the client, then bytes flow both ways untouched until either side closes, which
 * closes the other. A replica that answers otherwise has its answer relayed as it is.
 *
 * Answers of its own: 403 without a valid token or membership, 404 for an unknown run,
 * a run that is not a service or one that has finished, 503 while no replica is running,
 * 502 when the replica cannot be reached or refuses the connection; the same, on the socket,
 * for an upgrade.
 */
import type { ClientRequest, IncomingMessage } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { TLSSocket } from 'node:tls';
import { ResourceNotFoundError } from '@dstack/core';
import { findProject, getProjectForUser } from '../accounts/projects.js';
import { AgentUnreachableError } from '../agents/agent-unreachable-error.js';
import type { AppContext } from '../context.js';
import { runSpecOf } from '../db/json-columns.js';
import { HttpError } from '../http/error-mapping.js';
import { authenticate } from '../http/http-handler.js';
import {
  defineRawRoute,
  type RawRequestContext,
  type RawRouteDefinition,
  type RawUpgradeContext,
} from '../http/raw-route.js';
import { forwardUpgrade, requestUpstream } from '../http/upgrade-tunnel.js';
import { ACTIVE_RUN_STATUSES, findRunRow } from '../runs/runs.js';
import {
  SERVICE_PROXY_PREFIX,
  serviceConfigurationOf,
  servicePortOf,
  serviceProxyPrefix,
  serviceRequiresAuth,
} from '../runs/service-spec.js';
import {
  downstreamResponseHeaders,
  type ForwardedRequest,
  upgradeRequestHeaders,
  upstreamRequestHeaders,
} from './service-proxy-headers.js';
import { forgetReplicaTurn, nextReplica, replicaBaseUrl, runningReplicas } from './service-proxy-replicas.js';

/** Seconds a client is told to wait (`Retry-After`) while no replica is running. */
const RETRY_AFTER_SECONDS = 5;

/** `/proxy/services/{project}/{run}` and the rest of the request target, still URL-encoded. */
interface ProxyTarget {
  projectName: string;
  runName: string;
  /** What the replica is asked for: the path after the run name (at least `/`) and the query. */
  upstreamPath: string;
}

function parseTarget(requestUrl: string): ProxyTarget | null {
  const queryStart = requestUrl.indexOf('?');
  const path = queryStart === -1 ? requestUrl : requestUrl.slice(0, queryStart);
  const query = queryStart === -1 ? '' : requestUrl.slice(queryStart);
  const prefix = `${SERVICE_PROXY_PREFIX}/`;
  if (!path.startsWith(prefix)) return null;
  const match = /^([^/]+)\/([^/]+)(\/.*)?$/.exec(path.slice(prefix.length));
  if (!match) return null;
  try {
    return {
      projectName: decodeURIComponent(match[1] as string),
      runName: decodeURIComponent(match[2] as string),
      upstreamPath: `${match[3] ?? '/'}${query}`,
    };
  } catch {
    return null;
  }
}

/**
 * The proxy's "not found": 404, as web clients of a service expect (the API's own answer for a
 * missing resource is dstack's 400; the body's code is the same).
 */
function proxyNotFound(message: string): HttpError {
  return new HttpError(404, message, 'resource_not_exists');
}

function notFound(target: ProxyTarget): HttpError {
  return proxyNotFound(`Service ${target.runName} not found in project ${target.projectName}`);
}

/** Where a request through the proxy goes. */
interface ProxyDestination {
  /** `http://host:port` of the replica's service port. */
  replica: URL;
  /** Path and query as the client sent them (not resolved against the replica's URL: `//x` stays a path). */
  path: string;
  replicaName: string;
  /** What the replica is told about the client (see service-proxy-headers.ts). */
  forwarded: ForwardedRequest;
}

/**
 * The replica a request goes to, after the proxy's checks. Throws the proxy's own answers
 * (403/404/503/502); `setHeader` adds a header to that answer (`Retry-After` on 503).
 */
async function resolveDestination(
  app: AppContext,
  request: IncomingMessage,
  setHeader: (name: string, value: string) => void,
): Promise<ProxyDestination> {
  const target = parseTarget(request.url ?? '/');
  if (!target) {
    throw new HttpError(
      404,
      `Not found: ${request.url}; use ${SERVICE_PROXY_PREFIX}/{project}/{run}/`,
      'not_found',
    );
  }
  const project = await findProject(app, target.projectName);
  const run = project ? await findRunRow(app, project.id, target.runName) : null;
  const service = run ? serviceConfigurationOf(runSpecOf(run)) : null;
  // Only an open service is answered without a token; nothing else tells strangers what exists.
  const requiresAuth = service === null || serviceRequiresAuth(service);
  if (requiresAuth) {
    const user = await authenticate(app, request);
    try {
      await getProjectForUser(app, user, target.projectName);
    } catch (error) {
      if (ResourceNotFoundError.isInstance(error)) throw proxyNotFound(error.message);
      throw error;
    }
  }
  if (!project || !run || !service) throw notFound(target);
  if (!ACTIVE_RUN_STATUSES.includes(run.status)) {
    forgetReplicaTurn(app, run.id);
    throw proxyNotFound(`Service ${target.runName} is not running: the run is ${run.status}`);
  }
  const port = servicePortOf(service);

  const replicas = await runningReplicas(app, run.id);
  if (replicas.length === 0) {
    setHeader('retry-after', String(RETRY_AFTER_SECONDS));
    throw new HttpError(
      503,
      `Service ${target.runName} has no running replica yet (the run is ${run.status}); retry later`,
      'service_unavailable',
    );
  }
  const replica = nextReplica(app, run.id, replicas);
  let baseUrl: string;
  try {
    baseUrl = await replicaBaseUrl(app, project, replica, port);
  } catch (error) {
    if (!AgentUnreachableError.isInstance(error)) throw error;
    throw new HttpError(
      502,
      `Replica ${replica.job_name} cannot be reached: ${error.message}`,
      'bad_gateway',
    );
  }
  return {
    replica: new URL(baseUrl),
    path: target.upstreamPath,
    replicaName: replica.job_name,
    forwarded: {
      clientAddress: request.socket.remoteAddress,
      protocol: (request.socket as Partial<TLSSocket>).encrypted ? 'https' : 'http',
      prefix: serviceProxyPrefix(target.projectName, target.runName),
      keepAuthorization: !requiresAuth,
    },
  };
}

/** The request to the replica, not yet ended. */
function requestReplica(
  destination: ProxyDestination,
  method: string | undefined,
  headers: ReturnType<typeof upstreamRequestHeaders>,
  signal: AbortSignal,
): ClientRequest {
  return requestUpstream(destination.replica, { path: destination.path, method, headers, signal });
}

/** The 502 for a replica that did not answer (refused, reset, unreachable). */
function didNotAnswer(destination: ProxyDestination, error: unknown): HttpError {
  const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  return new HttpError(
    502,
    `Replica ${destination.replicaName} did not answer on ${destination.replica.host}: ${reason}`,
    'bad_gateway',
  );
}

async function handleProxyRequest({ app, request, response, signal }: RawRequestContext): Promise<void> {
  const destination = await resolveDestination(app, request, (name, value) =>
    response.setHeader(name, value),
  );
  await forward({ request, response, signal, destination });
}

/**
 * Streams the request to the replica and the answer back. Fails with 502 when the replica does
 * not answer; once the answer has started, a failure cuts the response (the handler destroys it).
 */
async function forward(options: {
  request: IncomingMessage;
  response: RawRequestContext['response'];
  signal: AbortSignal;
  destination: ProxyDestination;
}): Promise<void> {
  const { request, response, signal, destination } = options;
  const upstream = requestReplica(
    destination,
    request.method,
    upstreamRequestHeaders(request.headers, destination.forwarded),
    signal,
  );
  const answered = new Promise<IncomingMessage>((resolve, reject) => {
    upstream.once('response', resolve);
    upstream.once('error', reject);
  });
  // Upload failures surface as the upstream request's error (or the client's abort).
  pipeline(request, upstream).catch(() => {});
  let upstreamResponse: IncomingMessage;
  try {
    upstreamResponse = await answered;
  } catch (error) {
    if (signal.aborted) return;
    throw didNotAnswer(destination, error);
  }
  response.writeHead(
    upstreamResponse.statusCode ?? 502,
    upstreamResponse.statusMessage,
    downstreamResponseHeaders(upstreamResponse.headers),
  );
  // Answers such as server-sent events must reach the client as they are written.
  response.flushHeaders();
  try {
    await pipeline(upstreamResponse, response);
  } catch (error) {
    if (!signal.aborted) throw error;
  }
}

async function handleProxyUpgrade(context: RawUpgradeContext): Promise<void> {
  const { app, request, socket, head, signal } = context;
  const destination = await resolveDestination(app, request, context.setErrorHeader);
  const upstream = requestReplica(
    destination,
    request.method,
    upgradeRequestHeaders(request.headers, destination.forwarded),
    signal,
  );
  await forwardUpgrade(upstream, { socket, head, signal }, (error) => didNotAnswer(destination, error));
}

/** The raw route of the proxy, mounted by app.ts next to the JSON API. */
export const serviceProxyRoute: RawRouteDefinition = defineRawRoute({
  pathPrefix: SERVICE_PROXY_PREFIX,
  summary:
    'Forwards HTTP and WebSocket (protocol upgrades) to a running replica of a service (dstack in-server proxy)',
  handle: handleProxyRequest,
  upgrade: handleProxyUpgrade,
});
