/**
 * dstack's in-server service proxy (services without a gateway):
 * `/proxy/services/{project}/{run}/{path…}` → a running replica of the service, on its `port`.
 * Any method; bodies stream both ways untouched; the query string is kept. A dstack token of
 * a project member is required unless the service says `auth: false`; a dstack token never
 * reaches the replica, while an `auth: false` service's own key does.
 *
 * Protocol upgrades (WebSocket: Jupyter, Gradio, realtime APIs) go the same way: the replica's
 * 101 reaches the client, then bytes flow both ways untouched until either side closes, which
 * closes the other. A replica that answers otherwise has its answer relayed as it is.
 *
 * The replica is asked for the rest of the path on its own host and port: the request target is
 * never resolved as a URL. A target that is not a path (absolute-form `http://host/proxy/…`,
 * `//host/proxy/…`, `*`) is answered 400 before anything else, as at the gateway.
 *
 * Answers of its own: 400 for a target that is not a path, 403 without a valid token or
 * membership, 404 for an unknown run,
 * a run that is not a service or one that has finished, 429 with `Retry-After` past one of the
 * service's `rate_limits`, 503 while no replica is ready, 502 when the replica cannot be
 * reached or refuses the connection; the same, on the socket, for an upgrade.
 *
 * Each forwarded request is counted for the service's autoscaler (services/service-stats.ts). A
 * service that scales to zero (`replicas: 0..N`) holds a request while it has no ready replica,
 * up to `SCALE_FROM_ZERO_WAIT_MS`, instead of answering 503: the request itself makes the run
 * pipeline start one, and keeps it wanted until it answers. With `probes`, only replicas whose
 * probes pass get requests. A request whose replica refuses the connection (it is stopping) goes
 * to the next ready replica, its body untouched (it is sent once the connection is open); one
 * without a body also when the replica drops the connection before answering, and for a few
 * seconds through a moment without a ready replica.
 */
import type { ClientRequest, IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TLSSocket } from 'node:tls';
import { ResourceNotFoundError, type ServiceConfiguration } from '@dstack/core';
import { rateLimited, requestTargetRefusal, SCALE_FROM_ZERO_WAIT_MS } from '@dstack/core/agent-protocol';
import { findProject, getProjectForUser } from '../accounts/projects.js';
import { authenticate } from '../accounts/request-authentication.js';
import { AgentUnreachableError } from '../agents/agent-unreachable-error.js';
import type { AppContext } from '../context.js';
import { runSpecOf } from '../db/json-columns.js';
import type { JobsTable, ProjectsTable, RunsTable } from '../db/schema.js';
import { HttpError } from '../http/error-mapping.js';
import {
  defineRawRoute,
  type RawRequestContext,
  type RawRouteDefinition,
  type RawUpgradeContext,
} from '../http/raw-route.js';
import { forwardUpgrade, requestUpstream } from '../http/upgrade-tunnel.js';
import { ACTIVE_RUN_STATUSES, findRunRow } from '../runs/run-reads.js';
import {
  forgetReplicaTurn,
  nextReplica,
  replicaBaseUrl,
  runningReplicas,
} from '../services/service-proxy-replicas.js';
import {
  replicaRangeOf,
  SERVICE_PROXY_PREFIX,
  serviceConfigurationOf,
  serviceHasProbes,
  servicePortOf,
  serviceProxyPrefix,
  serviceRequiresAuth,
} from '../services/service-spec.js';
import { carriesDstackToken } from './dstack-token-check.js';
import { type ReplicaRequestBody, sendBodyWhenConnected } from './replica-request-body.js';
import {
  downstreamResponseHeaders,
  type ForwardedRequest,
  upgradeRequestHeaders,
  upstreamRequestHeaders,
} from './service-proxy-headers.js';

/** Seconds a client is told to wait (`Retry-After`) while no replica is running. */
const RETRY_AFTER_SECONDS = 5;
/** How often a waiting request looks for a ready replica. */
const REPLICA_POLL_MS = 200;
/**
 * How long a request without a body goes on trying the replicas when none accepts its connection:
 * a replica just started may not listen yet (on a loaded host, for seconds), one going away
 * refuses for a moment. A request that waited for a replica tries for as long as it may wait.
 */
const RECONNECT_WINDOW_MS = 5_000;

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
export interface ProxyDestination {
  /** `http://host:port` of the replica's service port. */
  replica: URL;
  /** Path and query as the client sent them (not resolved against the replica's URL: `//x` stays a path). */
  path: string;
  replicaName: string;
  /** What the replica is told about the client (see service-proxy-headers.ts). */
  forwarded: ForwardedRequest;
  /** The same request sent to another ready replica, or null when none is left to try. */
  another: () => Promise<ProxyDestination | null>;
  /** The replica answered, or the request gave up: it no longer keeps a replica wanted. */
  settled: () => void;
}

/** Waits for a ready replica of a service scaled to zero until `deadline`; [] when the wait ends without one. */
async function waitForReplicas(
  app: AppContext,
  runId: string,
  probed: boolean,
  deadline: number,
  signal: AbortSignal | undefined,
): Promise<JobsTable[]> {
  while (Date.now() < deadline && !signal?.aborted) {
    await sleep(REPLICA_POLL_MS);
    const replicas = await runningReplicas(app, runId, probed);
    if (replicas.length > 0) return replicas;
    const run = await app.db.selectFrom('runs').select('status').where('id', '=', runId).executeTakeFirst();
    if (!run || !ACTIVE_RUN_STATUSES.includes(run.status)) return [];
  }
  return [];
}

/**
 * The replica a request goes to, after the proxy's checks. Throws the proxy's own answers
 * (403/404/503/502); `setHeader` adds a header to that answer (`Retry-After` on 503).
 */
async function resolveDestination(
  app: AppContext,
  request: IncomingMessage,
  setHeader: (name: string, value: string) => void,
  signal?: AbortSignal,
): Promise<ProxyDestination> {
  const targetRefusal = requestTargetRefusal(request.url);
  if (targetRefusal !== null) throw new HttpError(400, targetRefusal, 'invalid_request');
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
  return replicaDestination(app, {
    project,
    run,
    service,
    path: target.upstreamPath,
    request,
    setHeader,
    // An open service gets the client's own key, never a dstack token the client sent along.
    keepAuthorization: !requiresAuth && !(await carriesDstackToken(app, request.headers.authorization)),
    signal,
  });
}

/** What `replicaDestination` needs: a service run found and its caller let through. */
export interface ReplicaDestinationOptions {
  project: ProjectsTable;
  run: RunsTable;
  service: ServiceConfiguration;
  /** Path and query asked of the replica. */
  path: string;
  request: IncomingMessage;
  setHeader: (name: string, value: string) => void;
  /** See `ForwardedRequest.keepAuthorization`. */
  keepAuthorization: boolean;
  /** Ends the wait of a service scaled to zero when the client leaves. */
  signal?: AbortSignal;
}

/**
 * The replica of a service run a request goes to (the service proxy and the model router,
 * model-proxy.ts, share it), after the service's rate limits, counted for its autoscaler.
 * Throws the proxy's answers: 404 for a finished run, 429, 503 (with `Retry-After`) while no
 * replica is ready, 502 when the replica's instance is unreachable.
 */
export async function replicaDestination(
  app: AppContext,
  options: ReplicaDestinationOptions,
): Promise<ProxyDestination> {
  const { project, run, service, request, setHeader, signal } = options;
  const target = { projectName: project.name, runName: run.run_name, upstreamPath: options.path };
  if (!ACTIVE_RUN_STATUSES.includes(run.status)) {
    forgetReplicaTurn(app, run.id);
    throw proxyNotFound(`Service ${target.runName} is not running: the run is ${run.status}`);
  }
  const port = servicePortOf(service);
  const waitSeconds = rateLimited(
    app.caches.services.rateLimiter,
    run.id,
    service.rate_limits,
    target.upstreamPath,
    request,
  );
  if (waitSeconds !== null) {
    setHeader('retry-after', String(waitSeconds));
    throw new HttpError(
      429,
      `Too many requests to service ${target.runName}; retry later`,
      'too_many_requests',
    );
  }
  app.caches.services.stats.record(run.id);

  const probed = serviceHasProbes(service);
  let replicas = await runningReplicas(app, run.id, probed);
  let waitUntil: number | null = null;
  let hold: { done(): void } | null = null;
  if (replicas.length === 0 && replicaRangeOf(service).min === 0) {
    waitUntil = Date.now() + SCALE_FROM_ZERO_WAIT_MS;
    // Counted as waiting (it keeps one replica wanted) until its replica answers.
    hold = app.caches.services.stats.waitStarted(run.id, { until: waitUntil, signal });
    // The run pipeline starts the wanted replica on its next pass.
    app.wakeUps.wake('runs');
    replicas = await waitForReplicas(app, run.id, probed, waitUntil, signal);
  }
  const settled = () => hold?.done();
  if (replicas.length === 0) {
    settled();
    setHeader('retry-after', String(RETRY_AFTER_SECONDS));
    throw new HttpError(
      503,
      `Service ${target.runName} has no running replica yet (the run is ${run.status}); retry later`,
      'service_unavailable',
    );
  }
  const forwarded: ForwardedRequest = {
    clientAddress: request.socket.remoteAddress,
    protocol: (request.socket as Partial<TLSSocket>).encrypted ? 'https' : 'http',
    prefix: serviceProxyPrefix(target.projectName, target.runName),
    keepAuthorization: options.keepAuthorization,
  };
  const tried = new Set<string>();
  const reconnectUntil = Math.max(waitUntil ?? 0, Date.now() + RECONNECT_WINDOW_MS);
  const destinationOf = async (replica: JobsTable): Promise<ProxyDestination> => {
    tried.add(replica.id);
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
      forwarded,
      another: async () => {
        const left = (await runningReplicas(app, run.id, probed)).filter((other) => !tried.has(other.id));
        if (left.length > 0) return destinationOf(nextReplica(app, run.id, left));
        // Every replica failed to connect: try the replicas of the moment again, for a while,
        // also through a moment without any (one judged unready, one replaced).
        for (;;) {
          if (signal?.aborted || Date.now() >= reconnectUntil) return null;
          await sleep(REPLICA_POLL_MS);
          tried.clear();
          const replicas = await runningReplicas(app, run.id, probed);
          if (replicas.length > 0) return destinationOf(nextReplica(app, run.id, replicas));
        }
      },
      settled,
    };
  };
  try {
    return await destinationOf(nextReplica(app, run.id, replicas));
  } catch (error) {
    settled();
    throw error;
  }
}

/** A request without a body can be sent again, to another replica. */
function hasNoBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] === undefined && (length === undefined || length === '0');
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
  const destination = await resolveDestination(
    app,
    request,
    (name, value) => response.setHeader(name, value),
    signal,
  );
  await forward({ request, response, signal, destination });
}

/**
 * Streams the request to the replica and the answer back. Fails with 502 when the replica does
 * not answer; once the answer has started, a failure cuts the response (the handler destroys it).
 * `body`, when given, is sent instead of the request's own stream: the model router's, which
 * read the start of the body to learn the model. A request is sent again to another ready
 * replica when its replica refuses the connection (its body is sent once the connection is
 * open, replica-request-body.ts), or, without a body, when the replica drops it before answering.
 */
export async function forward(options: {
  request: IncomingMessage;
  response: RawRequestContext['response'];
  signal: AbortSignal;
  destination: ProxyDestination;
  body?: Readable;
}): Promise<void> {
  const { request, response, signal } = options;
  const withoutBody = options.body === undefined && hasNoBody(request);
  const body = options.body ?? request;
  let destination = options.destination;
  let upstreamResponse: IncomingMessage;
  let sending: ReplicaRequestBody | null = null;
  if (withoutBody) request.resume();
  try {
    for (;;) {
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
      if (withoutBody) upstream.end();
      else sending = sendBodyWhenConnected(upstream, body);
      try {
        upstreamResponse = await answered;
        break;
      } catch (error) {
        if (signal.aborted) return;
        // A replica going away (drained, scaled down) between the choice and the connection.
        const next = sending?.started ? null : await destination.another();
        if (!next) throw didNotAnswer(destination, error);
        destination = next;
      }
    }
    // Answered: a held request no longer keeps its replica wanted (the answer may stream for long).
    destination.settled();
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
  } finally {
    destination.settled();
    sending?.stop();
  }
}

async function handleProxyUpgrade(context: RawUpgradeContext): Promise<void> {
  const { app, request, socket, head, signal } = context;
  const destination = await resolveDestination(app, request, context.setErrorHeader, signal);
  const upstream = requestReplica(
    destination,
    request.method,
    upgradeRequestHeaders(request.headers, destination.forwarded),
    signal,
  );
  try {
    await forwardUpgrade(upstream, { socket, head, signal }, (error) => didNotAnswer(destination, error));
  } finally {
    destination.settled();
  }
}

/** The raw route of the proxy, mounted by app.ts next to the JSON API. */
export const serviceProxyRoute: RawRouteDefinition = defineRawRoute({
  pathPrefix: SERVICE_PROXY_PREFIX,
  summary:
    'Forwards HTTP and WebSocket (protocol upgrades) to a running replica of a service (dstack in-server proxy)',
  handle: handleProxyRequest,
  upgrade: handleProxyUpgrade,
});
