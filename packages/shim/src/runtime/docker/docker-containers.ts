import { demultiplexDockerLogs } from './container-logs.js';
import type { ContainerCreateBody } from './container-spec.js';
import { type DockerEngineClient, DockerEngineError } from './docker-engine-client.js';

/** The parts of `GET /containers/{id}/json` this runtime reads. */
export interface ContainerInspection {
  Id: string;
  Name: string;
  State: { Status: string; Running: boolean; ExitCode: number };
  Config: { Labels: Record<string, string> | null; User?: string };
  NetworkSettings: { Ports: Record<string, { HostIp: string; HostPort: string }[] | null> | null };
}

/** Container calls of the Engine API, by id or name. */
export class DockerContainers {
  constructor(private readonly client: DockerEngineClient) {}

  async create(name: string, body: ContainerCreateBody): Promise<string> {
    const created = await this.client.requestJson<{ Id: string }>({
      method: 'POST',
      path: '/containers/create',
      query: { name },
      body,
    });
    return created.Id;
  }

  async start(id: string): Promise<void> {
    await this.client.request({ method: 'POST', path: `/containers/${id}/start` });
  }

  inspect(id: string): Promise<ContainerInspection> {
    return this.client.requestJson<ContainerInspection>({ method: 'GET', path: `/containers/${id}/json` });
  }

  /** Waits until the container is not running and returns its exit code. */
  async wait(id: string): Promise<number> {
    const result = await this.client.requestJson<{ StatusCode: number }>({
      method: 'POST',
      path: `/containers/${id}/wait`,
      query: { condition: 'not-running' },
      longPoll: true,
    });
    return result.StatusCode;
  }

  /** SIGTERM, then SIGKILL after `timeoutSeconds`. A stopped or missing container is fine. */
  async stop(id: string, timeoutSeconds: number): Promise<void> {
    try {
      await this.client.request({
        method: 'POST',
        path: `/containers/${id}/stop`,
        query: { t: Math.max(0, Math.round(timeoutSeconds)) },
        longPoll: true,
      });
    } catch (error) {
      if (!DockerEngineError.isNotFound(error)) throw error;
    }
  }

  async kill(id: string, signal = 'SIGKILL'): Promise<void> {
    await this.client.request({ method: 'POST', path: `/containers/${id}/kill`, query: { signal } });
  }

  /** Removes the container, running or not; a missing one is fine. */
  async remove(id: string): Promise<void> {
    try {
      await this.client.request({
        method: 'DELETE',
        path: `/containers/${id}`,
        query: { force: 1, v: 1 },
      });
    } catch (error) {
      // 409: a removal is already in progress, which is what was asked for.
      if (DockerEngineError.isNotFound(error)) return;
      if (error instanceof DockerEngineError && error.statusCode === 409) return;
      throw error;
    }
  }

  /** The container's last `lines` lines of stdout and stderr. */
  async logs(id: string, lines: number): Promise<string> {
    const response = await this.client.request({
      method: 'GET',
      path: `/containers/${id}/logs`,
      query: { stdout: 1, stderr: 1, tail: lines },
    });
    return demultiplexDockerLogs(response.body);
  }

  /** Ids of all containers, running or not, that carry `label` (`key` or `key=value`). */
  async listByLabel(label: string): Promise<string[]> {
    const containers = await this.client.requestJson<{ Id: string }[]>({
      method: 'GET',
      path: '/containers/json',
      query: { all: 1, filters: JSON.stringify({ label: [label] }) },
    });
    return containers.map((container) => container.Id);
  }
}
