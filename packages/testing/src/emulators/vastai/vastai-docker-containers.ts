/**
 * The containers Vast.ai rentals run, as real Docker containers on this machine: one per rental,
 * from an image that must already be here (nothing is pulled: a missing image fails the rental
 * the way a failed pull does), with the entrypoint, command, environment and user the rental
 * asked for, and each requested container port published on 127.0.0.1 at a port Docker picks
 * (Vast.ai too maps a rental's ports to random host ports).
 *
 * Network: the containers share a bridge network of the emulator's own (`dstack-vastai-rentals`,
 * not internal, so ports can be published). A container reaches this machine at the network's
 * gateway address (`gateway()`): a test serves what the container downloads (e.g. the runner)
 * on that address, or on 0.0.0.0, and hands the container `http://<gateway>:<port>/…`.
 *
 * Cleanup: every container carries `dev.dstack.vastai-rental` (and the contract id, the owner
 * process and the session); `close()` removes the session's containers, and the next `prepare()`
 * of any emulator removes the containers of emulators that died without closing.
 */
import { randomUUID } from 'node:crypto';
import { bridgeGateway } from '../hosts/agent-runtime-server.js';
import {
  containerOwner,
  DockerCommandError,
  removeOrphanedContainers,
  runDocker,
} from '../hosts/docker-cli.js';
import type { VastaiPortRequest } from './vastai-rent-request.js';

/** On every rental container: `docker ps --filter label=dev.dstack.vastai-rental` lists them all. */
export const VASTAI_RENTAL_LABEL = 'dev.dstack.vastai-rental';
/** The contract (instance) id a container runs. */
export const VASTAI_RENTAL_CONTRACT_LABEL = 'dev.dstack.vastai-rental.contract';
const OWNER_LABEL = 'dev.dstack.vastai-rental.owner';
const SESSION_LABEL = 'dev.dstack.vastai-rental.session';
const NETWORK_LABEL = 'dev.dstack.vastai-rental-network';

/** The bridge network the rental containers share by default. */
export const DEFAULT_VASTAI_RENTAL_NETWORK = 'dstack-vastai-rentals';

/** What a rental's container runs. */
export interface VastaiContainerSpec {
  readonly contractId: number;
  readonly image: string;
  /** The program started in place of the image's entrypoint; the image's own when undefined. */
  readonly entrypoint: string | undefined;
  /** Its arguments; the image's CMD when undefined. */
  readonly command: readonly string[] | undefined;
  readonly environment: Readonly<Record<string, string>>;
  readonly ports: readonly VastaiPortRequest[];
  readonly hostname: string | undefined;
  readonly user: string | undefined;
}

/** Vast.ai's `ports` of a running instance: `{"10022/tcp": [{"HostIp": "127.0.0.1", "HostPort": "49153"}]}`. */
export type VastaiPortMap = Record<string, { HostIp: string; HostPort: string }[]>;

/** Why a container did not start: its image is not here (`pull`), or Docker could not start it (`runtime`). */
export class VastaiContainerStartError extends Error {
  override readonly name = 'VastaiContainerStartError';
  constructor(
    readonly stage: 'pull' | 'runtime',
    message: string,
  ) {
    super(message);
  }
}

/** What the instances need from the machine their rentals run on. */
export interface VastaiContainers {
  /** Creates and starts the container; resolves with its published ports, rejects with `VastaiContainerStartError`. */
  start(spec: VastaiContainerSpec): Promise<VastaiPortMap>;
  /** Stops the container (an outbid rental); it stays until removed. Idempotent. */
  stop(contractId: number): Promise<void>;
  /** Removes the container with everything it ran. Idempotent. */
  remove(contractId: number): Promise<void>;
  /** Removes every container this object made. */
  close(): Promise<void>;
}

export interface DockerVastaiContainersOptions {
  /** The bridge network; made on first use when missing. Default `dstack-vastai-rentals`. */
  network?: string;
}

/** The message Docker gives for an image it would have to pull. */
function pullFailure(image: string): string {
  const repository = image.replace(/[:@][^/]*$/, '');
  return `Error response from daemon: pull access denied for ${repository}, repository does not exist or may require 'docker login': denied: requested access to the resource is denied`;
}

export class DockerVastaiContainers implements VastaiContainers {
  readonly network: string;
  readonly #owner = containerOwner();
  readonly #session = randomUUID();
  #prepared: Promise<void> | null = null;
  #madeNetwork = false;

  constructor(options: DockerVastaiContainersOptions = {}) {
    this.network = options.network ?? DEFAULT_VASTAI_RENTAL_NETWORK;
  }

  /** Removes dead emulators' containers and makes the network; the first `start` does it too. */
  prepare(): Promise<void> {
    if (this.#prepared === null) {
      const preparing = (async () => {
        await removeOrphanedContainers(VASTAI_RENTAL_LABEL, OWNER_LABEL);
        await this.#ensureNetwork();
      })();
      this.#prepared = preparing;
      preparing.catch(() => {
        if (this.#prepared === preparing) this.#prepared = null;
      });
    }
    return this.#prepared;
  }

  /** This machine's address on the containers' network: where a container reaches a server the tests run. */
  async gateway(): Promise<string> {
    await this.prepare();
    return bridgeGateway(this.network);
  }

  async #ensureNetwork(): Promise<void> {
    const labels = await runDocker(['network', 'inspect', '--format', '{{json .Labels}}', this.network]).then(
      (text) => (JSON.parse(text) as Record<string, string> | null) ?? {},
      (error: unknown) => {
        if (error instanceof DockerCommandError && error.isNotFound) return null;
        throw error;
      },
    );
    if (labels === null) {
      try {
        await runDocker([
          'network',
          'create',
          '--driver',
          'bridge',
          '--label',
          `${NETWORK_LABEL}=1`,
          this.network,
        ]);
        this.#madeNetwork = true;
      } catch (error) {
        // Another emulator may have made it meanwhile.
        if (!(error instanceof DockerCommandError && /already exists/i.test(error.stderr))) throw error;
      }
      return;
    }
    if (labels[NETWORK_LABEL] === undefined) {
      throw new Error(
        `Docker network ${this.network} exists but was not made for Vast.ai rentals (labelled ${NETWORK_LABEL}); remove it or choose another network`,
      );
    }
  }

  async start(spec: VastaiContainerSpec): Promise<VastaiPortMap> {
    await this.prepare();
    const imageHere = await runDocker(['image', 'inspect', '--format', '{{.Id}}', spec.image]).then(
      () => true,
      (error: unknown) => {
        if (error instanceof DockerCommandError && error.isNotFound) return false;
        throw error;
      },
    );
    if (!imageHere) throw new VastaiContainerStartError('pull', pullFailure(spec.image));
    const name = this.containerName(spec.contractId);
    await runDocker(this.#createArguments(name, spec));
    try {
      await runDocker(['start', name]);
    } catch (error) {
      if (!(error instanceof DockerCommandError)) throw error;
      throw new VastaiContainerStartError('runtime', error.stderr.trim() || error.message);
    }
    return this.#ports(name);
  }

  /**
   * The container of a contract (`docker logs`, `docker exec` in tests). The name follows from
   * the contract and this object's session (contract ids repeat across emulators), so a removal
   * racing the start (a rental destroyed while its container is being created) still names it.
   */
  containerName(contractId: number): string {
    return `dstack-vastai-${this.#session.slice(0, 8)}-${contractId}`;
  }

  #createArguments(name: string, spec: VastaiContainerSpec): string[] {
    const args = [
      'create',
      '--name',
      name,
      '--network',
      this.network,
      '--pull',
      'never',
      '--label',
      `${VASTAI_RENTAL_LABEL}=1`,
      '--label',
      `${VASTAI_RENTAL_CONTRACT_LABEL}=${spec.contractId}`,
      '--label',
      `${OWNER_LABEL}=${this.#owner}`,
      '--label',
      `${SESSION_LABEL}=${this.#session}`,
      '--hostname',
      spec.hostname ?? `C.${spec.contractId}`,
    ];
    if (spec.user) args.push('--user', spec.user);
    for (const [key, value] of Object.entries(spec.environment)) args.push('--env', `${key}=${value}`);
    for (const port of spec.ports)
      args.push('--publish', `127.0.0.1::${port.containerPort}/${port.protocol}`);
    if (spec.entrypoint !== undefined) args.push('--entrypoint', spec.entrypoint);
    args.push(spec.image, ...(spec.command ?? []));
    return args;
  }

  async #ports(name: string): Promise<VastaiPortMap> {
    const text = await runDocker(['inspect', '--format', '{{json .NetworkSettings.Ports}}', name]);
    const published = (JSON.parse(text) ?? {}) as Record<
      string,
      { HostIp: string; HostPort: string }[] | null
    >;
    const ports: VastaiPortMap = {};
    for (const [port, bindings] of Object.entries(published)) {
      if (bindings && bindings.length > 0) {
        ports[port] = bindings.map(({ HostIp, HostPort }) => ({ HostIp, HostPort: String(HostPort) }));
      }
    }
    return ports;
  }

  async stop(contractId: number): Promise<void> {
    await runDocker(['stop', '--time', '1', this.containerName(contractId)]).catch((error: unknown) => {
      if (!(error instanceof DockerCommandError && error.isNotFound)) throw error;
    });
  }

  async remove(contractId: number): Promise<void> {
    await runDocker(['rm', '--force', this.containerName(contractId)]).catch((error: unknown) => {
      if (!(error instanceof DockerCommandError && error.isNotFound)) throw error;
    });
  }

  async close(): Promise<void> {
    await runDocker(['ps', '--all', '--quiet', '--filter', `label=${SESSION_LABEL}=${this.#session}`])
      .then((ids) => {
        const left = ids.split('\n').filter((id) => id.trim() !== '');
        return left.length > 0 ? runDocker(['rm', '--force', ...left]) : '';
      })
      .catch(() => undefined);
    if (this.#madeNetwork) {
      // Another emulator's containers may still use it; then it stays for them.
      await runDocker(['network', 'rm', this.network]).catch(() => undefined);
      this.#madeNetwork = false;
    }
  }
}
