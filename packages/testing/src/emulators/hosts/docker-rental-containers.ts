/**
 * The containers a container provider's rentals run (Vast.ai instances, RunPod pods), as real
 * Docker containers on this machine: one per rental, from an image that must already be here
 * (nothing is pulled: a missing image fails the rental the way a failed pull does), with the
 * entrypoint, command, environment and user the rental asked for, and each requested container
 * port published on 127.0.0.1 at a port Docker picks (the providers too map a rental's ports to
 * random host ports).
 *
 * Network: the containers share a bridge network of the emulator's own (e.g.
 * `dstack-vastai-rentals`, not internal, so ports can be published). A container reaches this
 * machine at the network's gateway address (`gateway()`): a test serves what the container
 * downloads (e.g. the runner) on that address, or on 0.0.0.0, and hands the container
 * `http://<gateway>:<port>/…`.
 *
 * Cleanup: every container carries `dev.dstack.<kind>` (and the rental id, the owner process and
 * the session); `close()` removes the session's containers, and the next `prepare()` of any
 * emulator of the same kind removes the containers of emulators that died without closing.
 */
import { randomUUID } from 'node:crypto';
import { bridgeGateway } from './agent-runtime-server.js';
import { containerOwner, DockerCommandError, removeOrphanedContainers, runDocker } from './docker-cli.js';

/** A container port a rental publishes. */
export interface RentalPortRequest {
  readonly containerPort: number;
  readonly protocol: 'tcp' | 'udp';
}

/** What a rental's container runs. */
export interface RentalContainerSpec {
  /** The provider's id of the rental (a Vast.ai contract, a RunPod pod's sequence number). */
  readonly rentalId: number;
  readonly image: string;
  /** The program started in place of the image's entrypoint; the image's own when undefined. */
  readonly entrypoint: string | undefined;
  /** Its arguments; the image's CMD when undefined. */
  readonly command: readonly string[] | undefined;
  readonly environment: Readonly<Record<string, string>>;
  readonly ports: readonly RentalPortRequest[];
  readonly hostname: string | undefined;
  readonly user: string | undefined;
}

/** Docker's (and Vast.ai's) published ports: `{"10022/tcp": [{"HostIp": "127.0.0.1", "HostPort": "49153"}]}`. */
export type RentalPortMap = Record<string, { HostIp: string; HostPort: string }[]>;

/** Why a container did not start: its image is not here (`pull`), or Docker could not start it (`runtime`). */
export class RentalContainerStartError extends Error {
  override readonly name = 'RentalContainerStartError';
  constructor(
    readonly stage: 'pull' | 'runtime',
    message: string,
  ) {
    super(message);
  }
}

/** What an emulator's rentals need from the machine they run on. */
export interface RentalContainers {
  /** Creates and starts the container; resolves with its published ports, rejects with `RentalContainerStartError`. */
  start(spec: RentalContainerSpec): Promise<RentalPortMap>;
  /** Stops the container (an outbid rental); it stays until removed. Idempotent. */
  stop(rentalId: number): Promise<void>;
  /** Removes the container with everything it ran. Idempotent. */
  remove(rentalId: number): Promise<void>;
  /** Removes every container this object made. */
  close(): Promise<void>;
}

export interface DockerRentalContainersOptions {
  /**
   * What the rentals are, in labels and names: `vastai-rental` labels each container
   * `dev.dstack.vastai-rental` and names it `dstack-<name prefix>-<session>-<id>`.
   */
  kind: string;
  /** The container names' prefix after `dstack-`, e.g. `vastai`. */
  namePrefix: string;
  /** The bridge network; made on first use when missing. */
  network: string;
}

/** The message Docker gives for an image it would have to pull. */
function pullFailure(image: string): string {
  const repository = image.replace(/[:@][^/]*$/, '');
  return `Error response from daemon: pull access denied for ${repository}, repository does not exist or may require 'docker login': denied: requested access to the resource is denied`;
}

export class DockerRentalContainers implements RentalContainers {
  readonly network: string;
  /** On every container of this kind: `docker ps --filter label=<this>` lists them all. */
  readonly rentalLabel: string;
  /** The rental id a container runs. */
  readonly rentalIdLabel: string;
  readonly #ownerLabel: string;
  readonly #sessionLabel: string;
  readonly #networkLabel: string;
  readonly #namePrefix: string;
  readonly #owner = containerOwner();
  readonly #session = randomUUID();
  #prepared: Promise<void> | null = null;
  #madeNetwork = false;

  constructor(options: DockerRentalContainersOptions) {
    this.network = options.network;
    this.rentalLabel = `dev.dstack.${options.kind}`;
    this.rentalIdLabel = `${this.rentalLabel}.contract`;
    this.#ownerLabel = `${this.rentalLabel}.owner`;
    this.#sessionLabel = `${this.rentalLabel}.session`;
    this.#networkLabel = `${this.rentalLabel}-network`;
    this.#namePrefix = options.namePrefix;
  }

  /** Removes dead emulators' containers and makes the network; the first `start` does it too. */
  prepare(): Promise<void> {
    if (this.#prepared === null) {
      const preparing = (async () => {
        await removeOrphanedContainers(this.rentalLabel, this.#ownerLabel);
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
          `${this.#networkLabel}=1`,
          this.network,
        ]);
        this.#madeNetwork = true;
      } catch (error) {
        // Another emulator may have made it meanwhile.
        if (!(error instanceof DockerCommandError && /already exists/i.test(error.stderr))) throw error;
      }
      return;
    }
    if (labels[this.#networkLabel] === undefined) {
      throw new Error(
        `Docker network ${this.network} exists but was not made for these rentals (labelled ${this.#networkLabel}); remove it or choose another network`,
      );
    }
  }

  async start(spec: RentalContainerSpec): Promise<RentalPortMap> {
    await this.prepare();
    const imageHere = await runDocker(['image', 'inspect', '--format', '{{.Id}}', spec.image]).then(
      () => true,
      (error: unknown) => {
        if (error instanceof DockerCommandError && error.isNotFound) return false;
        throw error;
      },
    );
    if (!imageHere) throw new RentalContainerStartError('pull', pullFailure(spec.image));
    const name = this.containerName(spec.rentalId);
    await runDocker(this.#createArguments(name, spec));
    try {
      await runDocker(['start', name]);
    } catch (error) {
      if (!(error instanceof DockerCommandError)) throw error;
      throw new RentalContainerStartError('runtime', error.stderr.trim() || error.message);
    }
    return this.#ports(name);
  }

  /**
   * The container of a rental (`docker logs`, `docker exec` in tests). The name follows from
   * the rental and this object's session (rental ids repeat across emulators), so a removal
   * racing the start (a rental destroyed while its container is being created) still names it.
   */
  containerName(rentalId: number): string {
    return `dstack-${this.#namePrefix}-${this.#session.slice(0, 8)}-${rentalId}`;
  }

  #createArguments(name: string, spec: RentalContainerSpec): string[] {
    const args = [
      'create',
      '--name',
      name,
      '--network',
      this.network,
      '--pull',
      'never',
      '--label',
      `${this.rentalLabel}=1`,
      '--label',
      `${this.rentalIdLabel}=${spec.rentalId}`,
      '--label',
      `${this.#ownerLabel}=${this.#owner}`,
      '--label',
      `${this.#sessionLabel}=${this.#session}`,
      '--hostname',
      spec.hostname ?? `C.${spec.rentalId}`,
    ];
    if (spec.user) args.push('--user', spec.user);
    for (const [key, value] of Object.entries(spec.environment)) args.push('--env', `${key}=${value}`);
    for (const port of spec.ports)
      args.push('--publish', `127.0.0.1::${port.containerPort}/${port.protocol}`);
    if (spec.entrypoint !== undefined) args.push('--entrypoint', spec.entrypoint);
    args.push(spec.image, ...(spec.command ?? []));
    return args;
  }

  async #ports(name: string): Promise<RentalPortMap> {
    const text = await runDocker(['inspect', '--format', '{{json .NetworkSettings.Ports}}', name]);
    const published = (JSON.parse(text) ?? {}) as Record<
      string,
      { HostIp: string; HostPort: string }[] | null
    >;
    const ports: RentalPortMap = {};
    for (const [port, bindings] of Object.entries(published)) {
      if (bindings && bindings.length > 0) {
        ports[port] = bindings.map(({ HostIp, HostPort }) => ({ HostIp, HostPort: String(HostPort) }));
      }
    }
    return ports;
  }

  async stop(rentalId: number): Promise<void> {
    await runDocker(['stop', '--time', '1', this.containerName(rentalId)]).catch((error: unknown) => {
      if (!(error instanceof DockerCommandError && error.isNotFound)) throw error;
    });
  }

  async remove(rentalId: number): Promise<void> {
    await runDocker(['rm', '--force', this.containerName(rentalId)]).catch((error: unknown) => {
      if (!(error instanceof DockerCommandError && error.isNotFound)) throw error;
    });
  }

  async close(): Promise<void> {
    await runDocker(['ps', '--all', '--quiet', '--filter', `label=${this.#sessionLabel}=${this.#session}`])
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
