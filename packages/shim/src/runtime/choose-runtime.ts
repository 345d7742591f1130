import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DockerEngineClient, resolveDockerSocketPath } from './docker/docker-engine-client.js';
import { createDockerRuntime } from './docker/docker-runtime.js';
import { createProcessRuntime } from './process/process-runtime.js';
import type { TaskRuntime } from './task-runtime.js';

/** What `--runtime` takes: a runtime, or `auto` (Docker when its daemon answers, else process). */
export const RUNTIME_CHOICES = ['process', 'docker', 'auto'] as const;
export type RuntimeChoice = (typeof RUNTIME_CHOICES)[number];

export function isRuntimeChoice(name: string): name is RuntimeChoice {
  return (RUNTIME_CHOICES as readonly string[]).includes(name);
}

export interface RuntimeOptions {
  dockerSocket?: string;
  /** Docker runtime: where the runner's portable runtime is built; shims of one user share it. */
  runtimeCacheDirectory?: string;
  /** Docker runtime: the runner bundle put in containers; default @dstack/runner's. */
  runnerBundlePath?: string;
  /** Docker runtime: a complete portable runtime to mount as is (the agent runtime the shim runs from). */
  portableRuntimeDirectory?: string;
  /** Where `auto` says what it chose and why. */
  log?: (line: string) => void;
  /**
   * `auto` on a host with Docker installed whose daemon does not answer yet: how long to wait for
   * it (a VM's docker.service may start beside cloud-init, which starts the shim). Default 0: an
   * SSH host's stopped daemon is not about to start.
   */
  dockerStartTimeoutMs?: number;
  /** Where `auto` looks for `dockerd`. Default: `PATH`, then /usr/sbin and /usr/bin. */
  searchPath?: string;
}

const DOCKER_POLL_MS = 500;

/** Whether the host has Docker installed: its daemon binary or its socket. */
function dockerInstalled(socketPath: string, searchPath: string): boolean {
  if (existsSync(socketPath)) return true;
  return searchPath
    .split(delimiter)
    .filter((directory) => directory !== '')
    .some((directory) => existsSync(join(directory, 'dockerd')));
}

/**
 * The runtime for `choice`. `auto` is for hosts the server did not set up itself (cloud VMs):
 * their images decide whether Docker is there, and without it the process runtime runs the jobs
 * and refuses those that name an image.
 */
export async function chooseRuntime(
  choice: RuntimeChoice,
  options: RuntimeOptions = {},
): Promise<TaskRuntime> {
  const docker = () =>
    createDockerRuntime({
      socketPath: options.dockerSocket,
      runtimeCacheDirectory: options.runtimeCacheDirectory,
      runnerBundlePath: options.runnerBundlePath,
      portableRuntimeDirectory: options.portableRuntimeDirectory,
    });
  if (choice === 'process') return createProcessRuntime();
  if (choice === 'docker') return docker();
  let problem = await dockerProblem(options.dockerSocket);
  const socketPath = resolveDockerSocketPath(options.dockerSocket);
  const searchPath =
    options.searchPath ?? `${process.env.PATH ?? ''}${delimiter}/usr/sbin${delimiter}/usr/bin`;
  const timeoutMs = options.dockerStartTimeoutMs ?? 0;
  if (problem !== undefined && timeoutMs > 0 && dockerInstalled(socketPath, searchPath)) {
    options.log?.(`runtime auto: Docker is installed but does not answer yet; waiting up to ${timeoutMs} ms`);
    const deadline = Date.now() + timeoutMs;
    while (problem !== undefined && Date.now() < deadline) {
      await sleep(DOCKER_POLL_MS);
      problem = await dockerProblem(options.dockerSocket);
    }
  }
  if (problem === undefined) {
    options.log?.('runtime auto: the Docker daemon answers, jobs run in containers');
    return docker();
  }
  options.log?.(`runtime auto: no Docker (${problem}), jobs run as processes and images are refused`);
  return createProcessRuntime();
}

/** Why the Docker daemon at `socketPath` cannot run tasks, or undefined when it answers. */
async function dockerProblem(socketPath: string | undefined): Promise<string | undefined> {
  const client = new DockerEngineClient({ socketPath });
  try {
    await client.apiVersion();
    return undefined;
  } catch (error) {
    return `${client.socketPath}: ${error instanceof Error ? error.message : String(error)}`;
  } finally {
    await client.close();
  }
}
