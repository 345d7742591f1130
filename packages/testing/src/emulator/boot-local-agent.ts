import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunnerClient, startRunner } from '@dstack/runner';
import { ShimClient, startShim } from '@dstack/shim';
import type { EmulatedAgentAddress } from '../conformance/test-backend-options.js';

export interface BootLocalAgentOptions {
  /** `vm`: a shim (VM backends boot it from cloud-init); `container`: a runner (container entrypoint). */
  kind: 'vm' | 'container';
  /**
   * The agent's working area (shim tasks, runner workflow). Default: a new
   * temporary directory, removed by `stop()`; a given directory is left in place.
   */
  homeDir?: string;
  /**
   * The instance's agent token, as the backend handed it to the instance (cloud-init, the
   * container's environment): the agent then answers only requests that carry it, and a shim
   * gives each task's runner the token derived for the task. Default none: the API is open.
   */
  token?: string | null;
}

/** A real agent running on this machine for an emulated instance. */
export interface LocalAgent extends EmulatedAgentAddress {
  /** Always `127.0.0.1`: the agent listens on loopback. */
  readonly host: string;
  /** The agent's HTTP port (the shim's for `vm`, the runner's for `container`). */
  readonly port: number;
  /** `{ shim }` or `{ runner }`, the form `backend_data.agent_ports` takes. */
  readonly agentPorts: { readonly shim?: number; readonly runner?: number };
  readonly homeDir: string;
  /** Stops the agent (and its tasks) and removes the home it created. Idempotent. */
  stop(): Promise<void>;
}

/**
 * "An emulated instance boots our real agent on this machine": starts a real
 * shim (process runtime: tasks are host processes) for VM backends or a real
 * runner for container backends, on a free loopback port. Emulators call it
 * when an instance becomes running and stop it when the instance terminates.
 */
export async function bootLocalAgent(options: BootLocalAgentOptions): Promise<LocalAgent> {
  if (options.kind !== 'vm' && options.kind !== 'container') {
    throw new Error(`bootLocalAgent: kind must be "vm" or "container", got ${JSON.stringify(options.kind)}`);
  }
  const ownsHome = options.homeDir === undefined;
  const homeDir = options.homeDir ?? (await mkdtemp(join(tmpdir(), `dstack-emulated-${options.kind}-`)));
  try {
    const server =
      options.kind === 'vm'
        ? await startShim({ port: 0, homeDir, token: options.token })
        : await startRunner({ port: 0, homeDir, token: options.token });
    let stopping: Promise<void> | undefined;
    return {
      kind: options.kind,
      host: '127.0.0.1',
      port: server.port,
      url: server.url,
      agentPorts: options.kind === 'vm' ? { shim: server.port } : { runner: server.port },
      homeDir,
      stop() {
        stopping ??= (async () => {
          try {
            await server.close();
          } finally {
            if (ownsHome) await rm(homeDir, { recursive: true, force: true });
          }
        })();
        return stopping;
      },
    };
  } catch (error) {
    if (ownsHome) await rm(homeDir, { recursive: true, force: true });
    throw error;
  }
}

/** Asks the agent at `address` for its healthcheck; resolves with the answer, rejects when it does not answer. */
export async function agentHealthcheck(address: EmulatedAgentAddress): Promise<{ service: string }> {
  return address.kind === 'vm'
    ? new ShimClient(address.url).healthcheck()
    : new RunnerClient(address.url).healthcheck();
}
