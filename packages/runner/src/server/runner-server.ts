import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import type { Duplex } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DSTACK_RUNNER_HTTP_PORT,
  type RunnerSubmission,
  RunnerSubmitBodySchema,
} from '@dstack/core/agent-protocol';
import { InvalidArchiveError } from '../archive/tar-reader.js';
import { hostJobEnvironment } from '../job/host-job-environment.js';
import { JobExecutor, JobStateConflictError } from '../job/job-executor.js';
import type { UserDatabasePaths } from '../job/user-database.js';
import { JobMetricsCollector, type MetricsSource, visibleGpusOf } from '../metrics/job-metrics-collector.js';
import {
  type AuthorizedKey,
  AuthorizedKeyError,
  authorizedKeysOf,
  parseAuthorizedKeys,
} from '../ssh/authorized-keys.js';
import { SshEndpoint } from '../ssh/ssh-endpoint.js';
import { VERSION } from '../version.js';
import { agentTokenRefusal } from './agent-token.js';
import { HttpError, readJsonBody, rejectUpgrade, sendError, sendJson } from './http-helpers.js';
import { serveLogsWebSocket } from './logs-websocket.js';

export interface RunnerOptions {
  /** Address to listen on. Default `127.0.0.1`. */
  host?: string;
  /** Port to listen on; 0 picks a free one. Default `DSTACK_RUNNER_HTTP_PORT` (10999). */
  port?: number;
  /** The runner's working area: the repo goes to `<homeDir>/workflow`. Created if missing. */
  homeDir: string;
  /**
   * The environment jobs start from (DSTACK_* variables, secrets and the job's env are added).
   * Default: only the basics of this process's environment (`PATH`, `HOME`, ... see
   * `HOST_JOB_VARIABLES`), never all of it: a runner living inside a shim or a server must
   * not hand their tokens to jobs. The runner binary in a container passes the container's whole
   * environment (the image's variables and the task's), as dstack's runner does.
   */
  env?: Readonly<Record<string, string | undefined>>;
  /** Job log lines kept in memory; the oldest are dropped beyond it. Default 100 000. */
  maxJobLogLines?: number;
  /**
   * Who jobs run as when their spec names no `user` (dstack's `uid[:gid]` or `name[:group]`; a
   * shim passes its task's `container_user`). Switching to another user needs a runner running as
   * root; otherwise such a job fails naming `user`. Default: the runner's own user.
   */
  defaultJobUser?: string;
  /** Where job users and groups are looked up. Default: `/etc/passwd` and `/etc/group`. */
  userDatabase?: UserDatabasePaths;
  /**
   * The access token: when set, every request but the healthcheck (the SSH upgrade included)
   * must carry `Authorization: Bearer <token>`, else it is answered 401. Default none: the API
   * is open to every process that reaches the port.
   */
  token?: string | null;
  /**
   * A TCP port to serve SSH on besides `GET /api/ssh` (0 picks a free one), on `sshHost`; the
   * `sshAuthorizedKeys` may log in there from the start. Container backends use it: the server
   * logs in with the project key and forwards the HTTP port. Default: no SSH port.
   */
  sshPort?: number;
  /** The address of `sshPort`. Default `0.0.0.0`. */
  sshHost?: string;
  /** Public keys (authorized_keys lines) allowed on the SSH port before any job is submitted. */
  sshAuthorizedKeys?: readonly string[];
  /**
   * Where `GET /api/metrics` reads the job's CPU and memory: `cgroup`, the runner's own control
   * group, which is the job's when both live in one container (the runner binary); or
   * `job-processes`, the job's processes summed from `/proc` (a runner living inside the shim on
   * the host). Default `job-processes`.
   */
  metricsSource?: MetricsSource;
}

export interface RunnerServer {
  readonly port: number;
  /** The SSH port, when `sshPort` was given. */
  readonly sshPort: number | null;
  /** `http://host:port`. */
  readonly url: string;
  /** Stops the job gracefully (SIGTERM, SIGKILL after `graceSeconds`, default the job's stop_duration) and waits for it to exit. */
  stopJob(graceSeconds?: number): Promise<void>;
  /** Kills the job's process group and its SSH sessions, closes SSH connections and stops listening. */
  close(): Promise<void>;
}

/** Starts dstack's runner API for one job; resolves once it listens. */
export async function startRunner(options: RunnerOptions): Promise<RunnerServer> {
  const host = options.host ?? '127.0.0.1';
  await mkdir(options.homeDir, { recursive: true });
  const baseEnv = options.env ?? hostJobEnvironment(process.env);
  const executor = new JobExecutor({
    homeDir: options.homeDir,
    baseEnv,
    maxJobLogLines: options.maxJobLogLines,
    defaultUser: options.defaultJobUser,
    userDatabase: options.userDatabase,
  });
  const metricsSource = options.metricsSource ?? 'job-processes';
  const metrics = new JobMetricsCollector({
    source: metricsSource,
    jobPid: () => executor.jobPid,
    // On the host the job holds only the GPUs the shim made visible to it; in a container, all it sees.
    visibleGpus: metricsSource === 'job-processes' ? visibleGpusOf(baseEnv) : null,
  });
  const sshEndpoint = new SshEndpoint({
    serverKeys: (options.sshAuthorizedKeys ?? []).flatMap((line, index) =>
      parseAuthorizedKeys(line, `--ssh-authorized-key ${index + 1}`),
    ),
    launch: async () => {
      const { spawnAs, workingDir, env } = await executor.launch();
      return { identity: spawnAs, workingDir, env };
    },
  });
  const token = options.token ?? null;
  /** Upgraded `/logs_ws` connections: no server's own any more, so `close` ends them itself. */
  const logStreams = new Set<Duplex>();
  const routeOf = (request: IncomingMessage) =>
    `${request.method} ${new URL(request.url ?? '/', 'http://runner').pathname}`;
  /** The token is asked for on every route but `tokenless` ones. */
  const serve = (tokenless: ReadonlySet<string>) => {
    const refusalOf = (request: IncomingMessage) =>
      tokenless.has(routeOf(request)) ? null : agentTokenRefusal(request, token, 'runner');
    const handler = createServer((request, response) => {
      const refusal = refusalOf(request);
      if (refusal !== null) {
        request.resume();
        response.setHeader('www-authenticate', 'Bearer');
        sendError(response, refusal);
        return;
      }
      handleRequest(executor, sshEndpoint, metrics, options.homeDir, request, response).catch(
        (error: unknown) => {
          if (error instanceof JobStateConflictError) {
            sendError(response, new HttpError(409, error.message));
          } else if (!response.headersSent) {
            sendError(response, error);
          } else {
            response.destroy();
          }
        },
      );
    });
    handler.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      const route = routeOf(request);
      const refusal = refusalOf(request);
      if (refusal !== null) {
        rejectUpgrade(socket, refusal);
      } else if (route === 'GET /api/ssh') {
        sshEndpoint.handleUpgrade(request, socket, head);
      } else if (route === 'GET /logs_ws') {
        logStreams.add(socket);
        socket.once('close', () => logStreams.delete(socket));
        serveLogsWebSocket(request, socket, (timestamp) => executor.pull(timestamp));
      } else {
        rejectUpgrade(socket, new HttpError(404, `no upgrade route ${route}`));
      }
    });
    return handler;
  };
  const server = serve(new Set());
  // The same API for SSH logins that forward the runner's port, on no port of its own. dstack's
  // clients attach so and read the job's output from `/logs_ws` without the runner's token, which
  // they never get: their SSH key is their proof for that one route; the rest still asks for it.
  const overSsh = serve(new Set(['GET /logs_ws']));
  sshEndpoint.serveHttpOverSsh((channel) => overSsh.emit('connection', channel));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DSTACK_RUNNER_HTTP_PORT, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  sshEndpoint.setHttpPort(port);
  const sshPort =
    options.sshPort === undefined
      ? null
      : await sshEndpoint.listen(options.sshPort, options.sshHost ?? '0.0.0.0');
  let closing: Promise<void> | undefined;
  return {
    port,
    sshPort,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    stopJob: (graceSeconds) => executor.stop(graceSeconds),
    close() {
      closing ??= (async () => {
        await executor.stop(0);
        // Upgraded sockets are no longer the HTTP server's: closeAllConnections does not end them.
        sshEndpoint.close();
        for (const stream of logStreams) stream.destroy();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
      })();
      return closing;
    },
  };
}

async function handleRequest(
  executor: JobExecutor,
  sshEndpoint: SshEndpoint,
  metrics: JobMetricsCollector,
  homeDir: string,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://runner');
  const route = `${request.method} ${url.pathname}`;
  switch (route) {
    case 'GET /api/healthcheck':
      sendJson(response, 200, { service: 'dstack-runner', version: VERSION });
      return;
    case 'POST /api/submit': {
      const submission = await readJsonBody(request, RunnerSubmitBodySchema);
      const keys = parseSubmittedKeys(submission);
      executor.submit(submission);
      sshEndpoint.authorize(keys);
      sendJson(response, 200, {});
      return;
    }
    case 'POST /api/upload_code': {
      await receiveCode(executor, homeDir, request);
      sendJson(response, 200, {});
      return;
    }
    case 'POST /api/upload_archive': {
      await receiveArchive(executor, homeDir, request, url.searchParams.get('id'));
      sendJson(response, 200, {});
      return;
    }
    case 'POST /api/run': {
      request.resume();
      const started = await executor.run();
      sshEndpoint.activity.start();
      sendJson(response, 200, started);
      return;
    }
    case 'GET /api/pull':
      sendJson(response, 200, {
        ...executor.pull(parseTimestamp(url.searchParams.get('timestamp'))),
        no_connections_secs: sshEndpoint.activity.noConnectionsSecs(),
      });
      return;
    case 'GET /api/metrics':
      sendJson(response, 200, await metrics.sample());
      return;
    case 'POST /api/stop':
      request.resume();
      // The stop proceeds in the background; pull reports the final state. It cannot fail in a
      // way the client could act on, so a rejection is not reported here.
      executor.stop().catch(() => undefined);
      sendJson(response, 200, {});
      return;
    default:
      request.resume();
      throw new HttpError(404, `no route ${route}`);
  }
}

/** Streams the code to a file first: archives can be large, and a diff waits there for `run`. */
async function receiveCode(executor: JobExecutor, homeDir: string, request: IncomingMessage): Promise<void> {
  if (request.headers['content-length'] === '0') {
    // No code (the server always uploads, often nothing): no file to write and remove.
    request.resume();
    await executor.uploadCode('', 0);
    return;
  }
  const archivePath = join(homeDir, '.uploads', `${randomUUID()}.code`);
  let kept = false;
  try {
    const size = await receiveFile(request, archivePath);
    kept = await executor.uploadCode(archivePath, size).catch((error: unknown) => {
      // A job without repo_data has its archive unpacked here: a bad one is the uploader's to fix.
      if (error instanceof InvalidArchiveError) throw new HttpError(400, `upload_code: ${error.message}`);
      throw error;
    });
  } finally {
    if (!kept) await rm(archivePath, { force: true });
  }
}

/** dstack's `upload_archive?id=`: a file archive of the job, kept until `run` unpacks it. */
async function receiveArchive(
  executor: JobExecutor,
  homeDir: string,
  request: IncomingMessage,
  id: string | null,
): Promise<void> {
  if (id === null || !/^[A-Za-z0-9-]{1,64}$/.test(id)) {
    request.resume();
    throw new HttpError(
      400,
      'invalid query parameter id: expected a file archive id (letters, digits, dashes)',
    );
  }
  const archivePath = join(homeDir, '.uploads', `archive-${id}`);
  let kept = false;
  try {
    await receiveFile(request, archivePath);
    executor.uploadArchive(id, archivePath);
    kept = true;
  } finally {
    if (!kept) await rm(archivePath, { force: true });
  }
}

/** Streams the request's body to `path`; resolves with its size. */
async function receiveFile(request: IncomingMessage, path: string): Promise<number> {
  await mkdir(dirname(path), { recursive: true });
  let size = 0;
  request.on('data', (chunk: Buffer) => {
    size += chunk.length;
  });
  await pipeline(request, createWriteStream(path));
  return size;
}

function parseSubmittedKeys(submission: RunnerSubmission): AuthorizedKey[] {
  try {
    return authorizedKeysOf(submission);
  } catch (error) {
    if (error instanceof AuthorizedKeyError)
      throw new HttpError(400, `invalid request body: ${error.message}`);
    throw error;
  }
}

function parseTimestamp(value: string | null): number {
  if (value === null || value === '') {
    return 0;
  }
  const timestamp = Number(value);
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new HttpError(
      400,
      `invalid query parameter timestamp: expected a non-negative integer, got "${value}"`,
    );
  }
  return timestamp;
}
