import { mkdir } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  DSTACK_SHIM_HTTP_PORT,
  deriveRunnerToken,
  ShutdownRequestSchema,
  TaskConfigSchema,
  TaskTerminateRequestSchema,
} from '@dstack/core/agent-protocol';
import { agentTokenRefusal, HttpError, readJsonBody, sendJson } from '@dstack/runner';
import { readHostGpuIds, readInstanceInfo } from '../instance/instance-info.js';
import { createProcessRuntime } from '../runtime/process/process-runtime.js';
import type { TaskRuntime } from '../runtime/task-runtime.js';
import { GpuAllocator } from '../tasks/gpu-allocator.js';
import { TaskConflictError, TaskManager, TaskNotFoundError } from '../tasks/task-manager.js';
import { VERSION } from '../version.js';

/** Grace period for tasks when the shim stops (SIGTERM, then SIGKILL after it). */
const SHUTDOWN_TIMEOUT_SECONDS = 5;

export interface ShimOptions {
  /** Address to listen on. Default `127.0.0.1`. */
  host?: string;
  /** Port to listen on; 0 picks a free one. Default `DSTACK_SHIM_HTTP_PORT` (10998). */
  port?: number;
  /** The shim's working area: each task's files go to `<homeDir>/tasks/<id>`. Created if missing. */
  homeDir: string;
  /** How tasks run. Default: the process runtime (no containers). */
  runtime?: TaskRuntime;
  /**
   * The host's GPUs (NVIDIA indices) the shim hands out to tasks; an empty list gives tasks none
   * (they see no GPU). Default: those `nvidia-smi` lists.
   */
  gpuIds?: readonly string[];
  /**
   * The access token (the server's per-instance token). When set, every request but the
   * healthcheck must carry `Authorization: Bearer <token>`, else it is answered 401, and each
   * task's runner requires `deriveRunnerToken(token, task id)`. Default none: the shim's and the
   * runners' APIs are open to every process that reaches their ports.
   */
  token?: string | null;
}

export interface ShimServer {
  readonly port: number;
  /** `http://host:port`. */
  readonly url: string;
  /** Stops every task and stops listening. Idempotent. */
  close(): Promise<void>;
  /** Settles once the shim has closed, by `close()` or by `POST /api/shutdown`. */
  readonly closed: Promise<void>;
}

/** Starts dstack's shim API; resolves once it listens. */
export async function startShim(options: ShimOptions): Promise<ShimServer> {
  const host = options.host ?? '127.0.0.1';
  const tasksDir = join(options.homeDir, 'tasks');
  await mkdir(tasksDir, { recursive: true });
  const runtime = options.runtime ?? createProcessRuntime();
  const gpuIds = options.gpuIds ?? (await readHostGpuIds());
  const token = options.token ?? null;
  const tasks = new TaskManager(
    runtime,
    tasksDir,
    // The host's GPUs are those nvidia-smi lists, as dstack's shim finds them: on a host without
    // an NVIDIA driver a whole-instance task (-1) gets none and runs, rather than asking Docker
    // for a driver the host lacks.
    new GpuAllocator(gpuIds, { known: true }),
    (taskId) => (token === null ? null : deriveRunnerToken(token, taskId)),
  );

  let closing: Promise<void> | undefined;
  let markClosed: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => {
    markClosed = resolve;
  });
  const close = (timeoutSeconds = SHUTDOWN_TIMEOUT_SECONDS): Promise<void> => {
    closing ??= (async () => {
      try {
        await tasks.terminateAll({ terminationReason: 'terminated_by_server', timeoutSeconds });
        await closeRuntime(runtime);
      } finally {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        markClosed();
      }
    })();
    return closing;
  };

  const server = createServer((request, response) => {
    const refusal = agentTokenRefusal(request, token, 'shim');
    if (refusal !== null) {
      request.resume();
      response.setHeader('www-authenticate', 'Bearer');
      sendJson(response, refusal.statusCode, { detail: refusal.message });
      return;
    }
    handleRequest({ tasks, close }, request, response).catch((error: unknown) => {
      if (response.headersSent) {
        response.destroy();
        return;
      }
      const statusCode =
        error instanceof HttpError
          ? error.statusCode
          : error instanceof TaskNotFoundError
            ? 404
            : error instanceof TaskConflictError
              ? 409
              : 500;
      sendJson(response, statusCode, { detail: error instanceof Error ? error.message : String(error) });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DSTACK_SHIM_HTTP_PORT, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close: () => close(),
    closed,
  };
}

/** Runtimes holding connections (Docker) expose `close()`; it is not part of the runtime contract. */
async function closeRuntime(runtime: TaskRuntime): Promise<void> {
  const closable = runtime as TaskRuntime & { close?: () => Promise<void> };
  if (typeof closable.close === 'function') {
    await closable.close();
  }
}

interface ShimContext {
  tasks: TaskManager;
  close(timeoutSeconds?: number): Promise<void>;
}

const TASK_ROUTE = /^\/api\/tasks\/([^/]+)(?:\/(terminate|remove))?$/;

async function handleRequest(
  context: ShimContext,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const { pathname } = new URL(request.url ?? '/', 'http://shim');
  const route = `${request.method} ${pathname}`;
  switch (route) {
    case 'GET /api/healthcheck':
      sendJson(response, 200, { service: 'dstack-shim', version: VERSION });
      return;
    case 'GET /api/tasks':
      sendJson(response, 200, { tasks: context.tasks.list() });
      return;
    case 'POST /api/tasks':
      context.tasks.submit(await readJsonBody(request, TaskConfigSchema));
      sendJson(response, 200, {});
      return;
    case 'GET /api/instance/info':
      sendJson(response, 200, await readInstanceInfo());
      return;
    case 'POST /api/shutdown': {
      const { force } = await readJsonBody(request, ShutdownRequestSchema);
      sendJson(response, 200, {});
      // After answering: closing ends this connection. Force skips the tasks' grace period.
      response.once('finish', () => {
        context.close(force ? 0 : undefined).catch(() => undefined);
      });
      return;
    }
  }
  const match = TASK_ROUTE.exec(pathname);
  if (match !== null) {
    const id = decodeURIComponent(match[1]!);
    const action = match[2];
    if (request.method === 'GET' && action === undefined) {
      const task = context.tasks.get(id);
      if (task === undefined) {
        throw new TaskNotFoundError(`task ${id} not found`);
      }
      sendJson(response, 200, task);
      return;
    }
    if (request.method === 'POST' && action === 'terminate') {
      const body = await readJsonBody(request, TaskTerminateRequestSchema);
      await context.tasks.terminate(id, {
        terminationReason: body.termination_reason,
        terminationMessage: body.termination_message,
        timeoutSeconds: body.timeout,
      });
      sendJson(response, 200, {});
      return;
    }
    if (request.method === 'POST' && action === 'remove') {
      request.resume();
      await context.tasks.remove(id);
      sendJson(response, 200, {});
      return;
    }
  }
  request.resume();
  throw new HttpError(404, `no route ${route}`);
}
