import {
  agentAuthorizationHeader,
  callDeadline,
  type InstanceInfo,
  InstanceInfoSchema,
  type ShimHealthcheck,
  ShimHealthcheckSchema,
  type TaskConfigInput,
  type TaskInfo,
  TaskInfoSchema,
  type TaskList,
  TaskListSchema,
  type TaskTerminateRequest,
} from '@dstack/core/agent-protocol';
import { AgentApiError } from '@dstack/runner';
import { type Dispatcher, request } from 'undici';
import type { z } from 'zod';

export interface ShimClientOptions {
  /** The undici dispatcher, e.g. an `Agent` with `connect.socketPath` for a forwarded Unix socket. Default: undici's global one. */
  dispatcher?: Dispatcher;
  /** Per-request deadline in milliseconds, the whole answer included. Default 30 000. */
  timeoutMs?: number;
  /** The shim's token, sent as `Authorization: Bearer <token>` on every request. Default none. */
  token?: string | null;
  /** Aborts every request (e.g. when the caller gives up on its work), besides each one's deadline. */
  signal?: AbortSignal;
}

/** Talks to dstack's shim API (`@dstack/shim`'s server or dstack's Go shim). */
export class ShimClient {
  private readonly baseUrl: string;

  constructor(
    baseUrl: string,
    private readonly options: ShimClientOptions = {},
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
  }

  healthcheck(): Promise<ShimHealthcheck> {
    return this.call('GET', '/api/healthcheck', ShimHealthcheckSchema);
  }

  async listTasks(): Promise<TaskList['tasks']> {
    return (await this.call('GET', '/api/tasks', TaskListSchema)).tasks;
  }

  /** The task, or null when the shim does not know it. */
  async getTask(id: string): Promise<TaskInfo | null> {
    try {
      return await this.call('GET', `/api/tasks/${encodeURIComponent(id)}`, TaskInfoSchema);
    } catch (error) {
      if (error instanceof AgentApiError && error.statusCode === 404) {
        return null;
      }
      throw error;
    }
  }

  /** Submits a task; the shim starts it in the background (poll {@link getTask}). */
  async submitTask(config: TaskConfigInput): Promise<void> {
    await this.call('POST', '/api/tasks', null, config);
  }

  /** Stops the task (SIGTERM, SIGKILL after `timeout` seconds) and waits until it is terminated. */
  async terminateTask(id: string, body: TaskTerminateRequest = {}): Promise<void> {
    await this.call('POST', `/api/tasks/${encodeURIComponent(id)}/terminate`, null, body);
  }

  /** Frees a terminated task. */
  async removeTask(id: string): Promise<void> {
    await this.call('POST', `/api/tasks/${encodeURIComponent(id)}/remove`, null, {});
  }

  /** Asks the shim to stop its tasks and exit; `force` skips the tasks' grace period. */
  async shutdown(force = false): Promise<void> {
    await this.call('POST', '/api/shutdown', null, { force });
  }

  instanceInfo(): Promise<InstanceInfo> {
    return this.call('GET', '/api/instance/info', InstanceInfoSchema);
  }

  private async call<Schema extends z.ZodType>(
    method: 'GET' | 'POST',
    path: string,
    schema: Schema | null,
    body?: unknown,
  ): Promise<z.output<Schema>> {
    const timeout = this.options.timeoutMs ?? 30_000;
    const deadline = callDeadline(timeout, this.options.signal);
    let statusCode: number;
    let text: string;
    try {
      const response = await request(`${this.baseUrl}${path}`, {
        method,
        dispatcher: this.options.dispatcher,
        headers: {
          ...(this.options.token ? agentAuthorizationHeader(this.options.token) : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        headersTimeout: timeout,
        bodyTimeout: timeout,
        // bodyTimeout bounds the pause between two chunks only: a trickling answer needs a deadline.
        signal: deadline.signal,
      });
      statusCode = response.statusCode;
      text = await response.body.text();
    } finally {
      deadline.clear();
    }
    if (statusCode < 200 || statusCode >= 300) {
      throw new AgentApiError(`shim ${method} ${path} answered ${statusCode}: ${text}`, statusCode, text);
    }
    if (schema === null) {
      return undefined as z.output<Schema>;
    }
    return schema.parse(JSON.parse(text));
  }
}
