/**
 * dstack's model endpoint: `/proxy/models/{project}/` is an OpenAI base URL routing over the
 * project's services that declare `model` (project-models.ts).
 *
 * - `GET models` lists them in OpenAI's shape; `GET models/{name}` gives one.
 * - `POST chat/completions`, `completions`, `embeddings` go to the service named by the body's
 *   `model`, at the service's model `prefix` (`/v1` by default): `chat/completions` becomes
 *   `/v1/chat/completions` on a replica. The replica is chosen and the answer streamed by the
 *   service proxy (service-proxy.ts): server-sent events (`stream: true`) reach the client as
 *   the replica writes them, nothing is parsed or buffered on the way back.
 *
 * A dstack token of a project member is always required (dstack's model proxy enforces it even
 * for `auth: false` services), and it is not passed to the replica. The router's own answers
 * are in OpenAI's error shape (openai-errors.ts): 401/403, 404 for an unknown model or path,
 * 405, 400 for a body without a `model`, 413, and the service proxy's 429/503/502.
 *
 * Nothing of a body is read before the token, the membership, the path and method are checked
 * and the project is known to have a model; then only up to the body's `model`, and the
 * model, its service's rate limits and replicas are checked before the rest is read: it
 * streams to the replica (model-request-body.ts). dstack's router (FastAPI) reads and parses
 * the whole body before any of its checks, its token included.
 */
import { join } from 'node:path';
import { getProjectForUser } from '../accounts/projects.js';
import { authenticate } from '../accounts/request-authentication.js';
import type { ProjectsTable } from '../db/schema.js';
import { HttpError } from '../http/error-mapping.js';
import { defineRawRoute, type RawRequestContext, type RawRouteDefinition } from '../http/raw-route.js';
import { readModelRequestBody } from './model-request-body.js';
import { openAiErrorAnswer } from './openai-errors.js';
import { listProjectModels, type ProjectModel } from './project-models.js';
import { forward, replicaDestination } from './service-proxy.js';

/** The path prefix of the model endpoint. */
export const MODEL_PROXY_PREFIX = '/proxy/models';

/** The OpenAI endpoints routed by the body's `model`, as paths under the model prefix. */
const ROUTED_ENDPOINTS: ReadonlySet<string> = new Set(['chat/completions', 'completions', 'embeddings']);

/**
 * The largest request body accepted (prompts, embeddings inputs, images as data URLs), streamed
 * to the replica, not held. dstack's default `client_max_body_size` for services is 64 MiB.
 */
export const MODEL_REQUEST_MAX_BODY_BYTES = 64 * 1024 * 1024;

/** `/proxy/models/{project}/{endpoint}`, the endpoint without slashes at its ends. */
interface ModelProxyTarget {
  projectName: string;
  endpoint: string;
  /** The query string, `?` included, or empty. */
  query: string;
}

function parseTarget(requestUrl: string): ModelProxyTarget | null {
  const queryStart = requestUrl.indexOf('?');
  const path = queryStart === -1 ? requestUrl : requestUrl.slice(0, queryStart);
  const query = queryStart === -1 ? '' : requestUrl.slice(queryStart);
  const prefix = `${MODEL_PROXY_PREFIX}/`;
  if (!path.startsWith(prefix)) return null;
  const match = /^([^/]+)(?:\/(.*))?$/.exec(path.slice(prefix.length));
  if (!match) return null;
  try {
    return {
      projectName: decodeURIComponent(match[1] as string),
      endpoint: (match[2] ?? '').replace(/\/+$/, ''),
      query,
    };
  } catch {
    return null;
  }
}

function notFound(path: string): HttpError {
  return new HttpError(
    404,
    `Not found: ${path}; the model endpoint answers GET models, POST ${[...ROUTED_ENDPOINTS].join(', ')}`,
    'not_found',
  );
}

function methodNotAllowed(context: RawRequestContext, allowed: string): HttpError {
  context.response.setHeader('allow', allowed);
  return new HttpError(
    405,
    `Method ${context.request.method} not allowed; use ${allowed}`,
    'method_not_allowed',
  );
}

/** OpenAI's answer for a model it does not serve: 404, code `model_not_found`. */
function modelNotFound(name: string, projectName: string): HttpError {
  return new HttpError(404, `Model ${name} not found in project ${projectName}`, 'model_not_found');
}

/** A model in OpenAI's `GET /models` shape. */
function modelObject(model: ProjectModel, projectName: string) {
  return {
    id: model.name,
    object: 'model',
    created: Math.floor(model.run.submitted_at / 1000),
    owned_by: projectName,
  };
}

function writeJson(context: RawRequestContext, status: number, body: unknown): void {
  const payload = JSON.stringify(body);
  context.response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
  });
  context.response.end(payload);
}

async function answerModels(
  context: RawRequestContext,
  project: ProjectsTable,
  endpoint: string,
): Promise<void> {
  const models = await listProjectModels(context.app, project.id);
  if (endpoint === 'models') {
    writeJson(context, 200, {
      object: 'list',
      data: models.map((model) => modelObject(model, project.name)),
    });
    return;
  }
  const name = decodeURIComponent(endpoint.slice('models/'.length));
  const model = models.find((candidate) => candidate.name === name);
  if (!model) throw modelNotFound(name, project.name);
  writeJson(context, 200, modelObject(model, project.name));
}

/** The answer to a request for a project with no model at all, whatever the body names. */
function noModels(projectName: string): HttpError {
  return new HttpError(
    404,
    `Project ${projectName} has no models: none of its active services declares model`,
    'model_not_found',
  );
}

function requestTooLarge(bytes: number): HttpError {
  return new HttpError(
    413,
    `Request body is ${bytes} bytes, over the limit of ${MODEL_REQUEST_MAX_BODY_BYTES} bytes`,
    'request_too_large',
  );
}

/**
 * Routes a request by its body's `model`, checking before the body is read whatever can be
 * checked without it (the caller checked the token and membership): a project without models
 * is refused at once, and an over-long declared body too. Then the body is read only up to its
 * `model` (model-request-body.ts); an unknown model, the service's rate limits and a service
 * without a ready replica are answered from there, and the body goes on to the replica as a
 * stream, never whole in memory.
 */
async function routeToModel(
  context: RawRequestContext,
  project: ProjectsTable,
  target: ModelProxyTarget,
): Promise<void> {
  const { app, request, response, signal } = context;
  const models = await listProjectModels(app, project.id);
  if (models.length === 0) throw noModels(project.name);
  const body = await readModelRequestBody(request, {
    maxBytes: MODEL_REQUEST_MAX_BODY_BYTES,
    tooLarge: requestTooLarge,
    spoolDirectory: join(app.settings.serverDir, 'data', 'model-requests'),
  });
  try {
    const model = models.find((candidate) => candidate.name === body.model);
    if (!model) throw modelNotFound(body.model, project.name);
    const destination = await replicaDestination(app, {
      project,
      run: model.run,
      service: model.service,
      path: `${model.prefix}/${target.endpoint}${target.query}`,
      request,
      setHeader: (header, value) => response.setHeader(header, value),
      keepAuthorization: false,
      signal,
    });
    await forward({ request, response, signal, destination, body: body.stream() });
  } finally {
    // Not awaited: a body still arriving after the answer (dropped, see replica-request-body.ts)
    // keeps its file until it ends, and the answer must not wait for it.
    void body.release();
  }
}

async function handleModelRequest(context: RawRequestContext): Promise<void> {
  const { app, request } = context;
  const target = parseTarget(request.url ?? '/');
  if (!target) throw notFound(request.url ?? '/');
  const user = await authenticate(app, request);
  const { project } = await getProjectForUser(app, user, target.projectName);
  const method = request.method ?? 'GET';
  if (target.endpoint === 'models' || target.endpoint.startsWith('models/')) {
    if (method !== 'GET') throw methodNotAllowed(context, 'GET');
    await answerModels(context, project, target.endpoint);
    return;
  }
  if (!ROUTED_ENDPOINTS.has(target.endpoint)) throw notFound(request.url ?? '/');
  if (method !== 'POST') throw methodNotAllowed(context, 'POST');
  await routeToModel(context, project, target);
}

/** The raw route of the model endpoint, mounted by app.ts next to the service proxy. */
export const modelProxyRoute: RawRouteDefinition = defineRawRoute({
  pathPrefix: MODEL_PROXY_PREFIX,
  summary: "OpenAI-compatible endpoint over a project's services that declare `model` (dstack's model proxy)",
  async handle(context) {
    try {
      await handleModelRequest(context);
    } catch (error) {
      // Once the replica's answer has started, only cutting it is left (the HTTP handler does).
      if (context.response.headersSent) throw error;
      const answer = openAiErrorAnswer(error);
      // Internal errors go to the HTTP handler, which logs them.
      if (answer.logMessage) throw error;
      // Unread bytes of a refused request must not be mistaken for the next request.
      context.request.resume();
      writeJson(context, answer.status, answer.body);
    }
  },
});
