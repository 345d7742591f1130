/**
 * dstack's in-server service proxy (services without a gateway):
 * `/proxy/services/{project}/{run}/{path…}` → a running replica of the service, on its `port`.
 * Any method; bodies stream both ways untouched; the query string is kept. A dstack token of
 * a project member is required unless the service says `auth: false`.
 *
 * Answers of its own: 401/403 without a valid token or membership, 404 for an unknown run,
 * a run that is not a service or one that has finished, 503 while no replica is running,
 * 502 when the replica cannot be reached or refuses the connection. WebSocket upgrades are
 * not proxied.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { TLSSocket } from 'node:tls';
import { ResourceNotFoundError, type RunSpec } from '@dstack/core';
import { AgentUnreachableError } from '../agents/agent-unreachable-error.js';
import type { AppContext } from '../context.js';
import type { ProjectsTable, RunsTable } from '../db/schema.js';
import { HttpError } from '../http/error-mapping.js';
import { authenticate } from '../http/http-handler.js';
import { defineRawRoute, type RawRequestContext, type RawRouteDefinition } from '../http/raw-route.js';
import { getProjectForUser } from './projects.js';
import { ACTIVE_RUN_STATUSES } from './runs.js';
import { downstreamResponseHeaders, upstreamRequestHeaders } from './service-proxy-headers.js';
import { forgetReplicaTurn, nextReplica, replicaBaseUrl, runningReplicas } from './service-proxy-replicas.js';
import {
  SERVICE_PROXY_PREFIX,
  serviceConfigurationOf,
  servicePortOf,
  serviceProxyPrefix,
  serviceRequiresAuth,
} from './service-proxy-spec.js';

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

async function findProjectRow(app: AppContext, name: string): Promise<ProjectsTable | undefined> {
  return app.db
    .selectFrom('projects')
    .selectAll()
    .where('name', '=', name)
    .where('deleted', '=', 0)
    .executeTakeFirst();
}

async function findRunRow(
  app: AppContext,
  projectId: string,
  runName: string,
): Promise<RunsTable | undefined> {
  return app.db
    .selectFrom('runs')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('run_name', '=', runName)
    .where('deleted', '=', 0)
    .orderBy('submitted_at', 'desc')
    .executeTakeFirst();
}

function notFound(target: ProxyTarget): ResourceNotFoundError {
  return new ResourceNotFoundError(`Service ${target.runName} not found in project ${target.projectName}`);
}

async function handleProxyRequest({ app, request, response, signal }: RawRequestContext): Promise<void> {
  const target = parseTarget(request.url ?? '/');
  if (!target) {
    throw new HttpError(
      404,
      `Not found: ${request.url}; use ${SERVICE_PROXY_PREFIX}/{project}/{run}/`,
      'not_found',
    );
  }
  const project = await findProjectRow(app, target.projectName);
  const run = project ? await findRunRow(app, project.id, target.runName) : undefined;
  const service = run ? serviceConfigurationOf(JSON.parse(run.run_spec) as RunSpec) : null;
  // Only an open service is answered without a token; nothing else tells strangers what exists.
  const requiresAuth = service === null || serviceRequiresAuth(service);
  if (requiresAuth) {
    const user = await authenticate(app, request);
    await getProjectForUser(app, user, target.projectName);
  }
  if (!project || !run || !service) throw notFound(target);
  if (!ACTIVE_RUN_STATUSES.includes(run.status)) {
    forgetReplicaTurn(app, run.id);
    throw new ResourceNotFoundError(`Service ${target.runName} is not running: the run is ${run.status}`);
  }
  const port = servicePortOf(service);
  if (port === null) throw new Error(`Service ${target.runName} has no port in its configuration`);

  const replicas = await runningReplicas(app, run.id);
  if (replicas.length === 0) {
    response.setHeader('retry-after', String(RETRY_AFTER_SECONDS));
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
  await forward({
    request,
    response: response,
    signal,
    replica: new URL(baseUrl),
    path: target.upstreamPath,
    replicaName: replica.job_name,
    headers: upstreamRequestHeaders(request.headers, {
      clientAddress: request.socket.remoteAddress,
      protocol: (request.socket as Partial<TLSSocket>).encrypted ? 'https' : 'http',
      prefix: serviceProxyPrefix(target.projectName, target.runName),
      keepAuthorization: !requiresAuth,
    }),
  });
}

/**
 * Streams the request to `url` and the answer back. Fails with 502 when the replica does not
 * answer; once the answer has started, a failure cuts the response (the handler destroys it).
 */
async function forward(options: {
  request: IncomingMessage;
  response: RawRequestContext['response'];
  signal: AbortSignal;
  /** `http://host:port` of the replica's service port. */
  replica: URL;
  /** Path and query as the client sent them (not resolved against the replica's URL: `//x` stays a path). */
  path: string;
  replicaName: string;
  headers: ReturnType<typeof upstreamRequestHeaders>;
}): Promise<void> {
  const { request, response, signal, replica } = options;
  const upstream = httpRequest({
    protocol: replica.protocol,
    hostname: replica.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: replica.port,
    path: options.path,
    method: request.method,
    headers: options.headers,
    signal,
  });
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
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new HttpError(
      502,
      `Replica ${options.replicaName} did not answer on ${replica.host}: ${reason}`,
      'bad_gateway',
    );
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

/** The raw route of the proxy, mounted by app.ts next to the JSON API. */
export const serviceProxyRoute: RawRouteDefinition = defineRawRoute({
  pathPrefix: SERVICE_PROXY_PREFIX,
  summary: 'Forwards HTTP to a running replica of a service (dstack in-server proxy)',
  handle: handleProxyRequest,
});
