/**
 * Emulated cloud hosts as Docker containers: one container per instance, from the locally built
 * emulated-host image of the kind the instance's image is (without Docker, with it, or with it and
 * dstack's images pre-pulled), on an internal
 * bridge network of the emulator's own. The container's address is the instance's address; its
 * boot script starts the image's Docker daemon, runs the user data as cloud-init would, and then
 * sshd. Terminating the instance removes the container with everything it ran (and the storage of
 * its Docker daemon).
 *
 * A host with Docker runs its own daemon (Docker in Docker): its container gets every capability
 * this machine has (`--privileged` asks for ones a sandbox may lack), no seccomp or AppArmor
 * profile, every device, and its store (/var/lib/docker) outside the container's own overlay,
 * which overlay2 cannot stack on: a volume, or for hosts of dstack's images a directory made from
 * the image's pre-pulled store (`prepulled-docker-stores.ts`).
 *
 * Isolation: the network is `--internal`, and each host's default route is removed before
 * anything in it runs (Docker still gives internal networks' containers one, and this machine
 * forwards), so a host reaches only its network: the other hosts and this machine's address on
 * the bridge. This machine reaches every host at its address.
 */
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { posix } from 'node:path';
import type { EmulatedHost, EmulatedHosts, HostBlockDevice, HostLaunchRequest } from '../emulated-hosts.js';
import { containerOwner, DockerCommandError, removeOrphanedContainers, runDocker } from './docker-cli.js';
import {
  dockerDaemonRunOptions,
  type EmulatedHostKind,
  emulatedHostImage,
  ensureEmulatedHostImage,
  hasDockerDaemon,
} from './emulated-host-image.js';
import { instanceBootFiles } from './instance-boot-files.js';
import {
  prepulledStoreFor,
  removeOrphanedStores,
  removePrepulledStore,
  removeSessionStores,
} from './prepulled-docker-stores.js';
import { tarArchive } from './tar-archive.js';

/** On every host container: `docker ps --filter label=dev.dstack.emulated-host` lists them all. */
export const EMULATED_HOST_LABEL = 'dev.dstack.emulated-host';
/** The instance id a host container stands for. */
export const EMULATED_HOST_INSTANCE_LABEL = 'dev.dstack.emulated-host.instance-id';
/** The emulator that booted the host (`DockerEmulatedHostsOptions.emulator`). */
export const EMULATED_HOST_EMULATOR_LABEL = 'dev.dstack.emulated-host.emulator';
/** `<machine>:<pid>` of the process that booted the host, to find the hosts of a crashed emulator. */
const OWNER_LABEL = 'dev.dstack.emulated-host.owner';
/** One DockerEmulatedHosts object, for its `close`. */
const SESSION_LABEL = 'dev.dstack.emulated-host.session';
/** On the network the hosts share. */
const NETWORK_LABEL = 'dev.dstack.emulated-host-network';

/** The network the hosts share by default. */
export const DEFAULT_EMULATED_HOSTS_NETWORK = 'dstack-emulated-hosts';
/**
 * How long `launch` waits for the host's sshd by default: generous, since on a loaded 2-core
 * machine a host's boot (its Docker daemon, its host keys) took over a minute; a host whose boot
 * failed is reported at once, not at this deadline.
 */
export const DEFAULT_SSHD_TIMEOUT_MS = 180_000;
const SSHD_POLL_MS = 100;
const SSH_BANNER_TIMEOUT_MS = 2_000;

export interface DockerEmulatedHostsOptions {
  /**
   * The emulator's name (`aws`, `gcp`): a label on its containers and part of their names
   * (`dstack-<emulator>-<instance id>`). Default `emulator`.
   */
  emulator?: string;
  /** The internal bridge network the hosts share; made on first launch when missing. Default `dstack-emulated-hosts`. */
  network?: string;
  /** How long `launch` waits for sshd to answer. Default 180 s. */
  sshdTimeoutMs?: number;
}

/** The host was terminated (or the emulator closed) before its launch completed. */
export class HostTerminatedError extends Error {
  override readonly name = 'HostTerminatedError';
}

interface HostRecord {
  readonly containerName: string;
  /** Set by terminate and close; a launch in progress checks it after each step. */
  terminated: boolean;
  /** The removal under way: a terminate racing another (the emulator's, close's) joins it. */
  removal?: Promise<void>;
}

/** Docker names allow `[a-zA-Z0-9][a-zA-Z0-9_.-]*`; host names (RFC 1123) letters, digits and `-`, 63 at most. */
function dockerName(value: string): string {
  return value.replace(/[^a-zA-Z0-9_.-]/g, '-');
}
function hostName(instanceId: string): string {
  const name = instanceId
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/, '');
  return name === '' ? 'emulated-host' : name;
}

/** Resolves once something at address:22 speaks SSH (its banner), rejects otherwise. */
function sshdAnswers(address: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address, port: 22 });
    let received = '';
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.setTimeout(SSH_BANNER_TIMEOUT_MS, () => fail(new Error('no SSH banner in time')));
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (received.includes('SSH-')) {
        socket.destroy();
        resolve();
      }
    });
    socket.once('error', fail);
    socket.once('close', () => reject(new Error('closed without an SSH banner')));
  });
}

export class DockerEmulatedHosts implements EmulatedHosts {
  readonly emulator: string;
  readonly network: string;
  readonly #sshdTimeoutMs: number;
  readonly #owner = containerOwner();
  readonly #session = randomUUID();
  readonly #hosts = new Map<string, HostRecord>();
  /** Registry address → the certificate hosts with Docker trust for it (`trustRegistry`). */
  readonly #trustedRegistries = new Map<string, string>();
  /** The registry that stands in for Docker Hub (`trustRegistry`'s `dockerHub`), or null. */
  #dockerHubMirror: string | null = null;
  #prepared: Promise<void> | null = null;
  #madeNetwork = false;
  #closed = false;

  constructor(options: DockerEmulatedHostsOptions = {}) {
    this.emulator = options.emulator ?? 'emulator';
    if (!/^[a-z0-9][a-z0-9-]*$/.test(this.emulator)) {
      throw new Error(
        `DockerEmulatedHosts emulator must be lowercase letters, digits and -, not ${this.emulator}`,
      );
    }
    this.network = options.network ?? DEFAULT_EMULATED_HOSTS_NETWORK;
    this.#sshdTimeoutMs = options.sshdTimeoutMs ?? DEFAULT_SSHD_TIMEOUT_MS;
  }

  /**
   * Builds the image with Docker if needed, removes the hosts of emulators that died without
   * closing, and makes the network. Done by the first launch; call it to pay that cost (and see
   * Docker's errors) at the emulator's start.
   */
  prepare(): Promise<void> {
    if (this.#prepared === null) {
      const preparing = this.#prepare();
      this.#prepared = preparing;
      // A failed preparation is retried by the next launch.
      preparing.catch(() => {
        if (this.#prepared === preparing) this.#prepared = null;
      });
    }
    return this.#prepared;
  }

  async #prepare(): Promise<void> {
    await ensureEmulatedHostImage('docker');
    await this.#removeOrphanedHosts();
    await this.#ensureNetwork();
  }

  async #removeOrphanedHosts(): Promise<void> {
    await removeOrphanedContainers(EMULATED_HOST_LABEL, OWNER_LABEL);
    await removeOrphanedStores();
  }

  async #inspectNetwork(): Promise<{ internal: boolean; ours: boolean } | null> {
    try {
      const text = await runDocker(['network', 'inspect', '--format', '{{json .}}', this.network]);
      const network = JSON.parse(text) as { Internal?: boolean; Labels?: Record<string, string> | null };
      return { internal: network.Internal === true, ours: network.Labels?.[NETWORK_LABEL] !== undefined };
    } catch (error) {
      if (error instanceof DockerCommandError && error.isNotFound) return null;
      throw error;
    }
  }

  async #ensureNetwork(): Promise<void> {
    let network = await this.#inspectNetwork();
    if (network === null) {
      try {
        await runDocker([
          'network',
          'create',
          '--driver',
          'bridge',
          '--internal',
          '--label',
          `${NETWORK_LABEL}=1`,
          this.network,
        ]);
        this.#madeNetwork = true;
        return;
      } catch (error) {
        // Another emulator may have made it meanwhile.
        network = await this.#inspectNetwork();
        if (network === null) throw error;
      }
    }
    if (!network.ours || !network.internal) {
      throw new Error(
        `Docker network ${this.network} exists but was not made for emulated hosts (an internal bridge labelled ${NETWORK_LABEL}); remove it or choose another network`,
      );
    }
  }

  /**
   * Hosts launched from now on trust `certificate` (PEM) for the registry at `address`
   * (`host:port`), in /etc/docker/certs.d as an image made for a private mirror would: the test
   * registry stands in for Docker Hub, whose certificate a real image trusts already. With
   * `dockerHub`, it is where their daemons reach Docker Hub (their mirror of it).
   */
  trustRegistry(address: string, certificate: string, options: { dockerHub?: boolean } = {}): void {
    this.#trustedRegistries.set(address, certificate);
    if (options.dockerHub) this.#dockerHubMirror = address;
  }

  async launch(request: HostLaunchRequest): Promise<EmulatedHost> {
    const { instanceId, userData } = request;
    const kind = request.kind ?? 'docker';
    if (typeof instanceId !== 'string' || instanceId === '') {
      throw new Error('HostLaunchRequest.instanceId must be a non-empty string');
    }
    if (typeof userData !== 'string') throw new Error('HostLaunchRequest.userData must be a string');
    if (this.#closed)
      throw new HostTerminatedError(`cannot launch ${instanceId}: the emulated hosts are closed`);
    if (this.#hosts.has(instanceId)) throw new Error(`instance ${instanceId} already has a host`);
    // Bad user data fails the launch before any container exists.
    const bootFiles = [...instanceBootFiles(userData), ...this.#registryFiles()];
    const bootArchive = tarArchive(bootFiles.map((file) => ({ ...file, path: file.path.slice(1) })));
    const record: HostRecord = {
      containerName: `dstack-${this.emulator}-${dockerName(instanceId)}`,
      terminated: false,
    };
    this.#hosts.set(instanceId, record);
    try {
      await this.prepare();
      await ensureEmulatedHostImage(kind);
      this.#checkNotTerminated(instanceId, record);
      await this.#createContainer(instanceId, record.containerName, kind);
      this.#checkNotTerminated(instanceId, record);
      await runDocker(['cp', '-', `${record.containerName}:/`], { input: bootArchive });
      await runDocker(['start', record.containerName]);
      await this.#sealNetwork(record.containerName, kind);
      const address = await this.#address(record.containerName);
      await this.#waitForSshd(instanceId, record, address);
      return { instanceId, address };
    } catch (error) {
      await this.#remove(record).catch(() => undefined);
      if (this.#hosts.get(instanceId) === record) this.#hosts.delete(instanceId);
      if (record.terminated && !(error instanceof HostTerminatedError)) {
        throw new HostTerminatedError(`instance ${instanceId} was terminated while it booted`, {
          cause: error,
        });
      }
      throw error;
    }
  }

  #checkNotTerminated(instanceId: string, record: HostRecord): void {
    if (record.terminated)
      throw new HostTerminatedError(`instance ${instanceId} was terminated while it booted`);
  }

  /**
   * The Docker daemon's configuration a host boots with: the registries' certificates, and Docker
   * Hub's stand-in as the daemon's mirror of Docker Hub (Docker Hub is out of reach here), so that
   * a job's `dstackai/base:...` is pulled by its real name, as on a real host. The mirror is a flag
   * in the daemon's service settings (/etc/default/docker, which its init script reads), not in
   * /etc/docker/daemon.json: user data that writes its own daemon.json (dstack's Nebius setup
   * commands) keeps it, as a real host keeps reaching Docker Hub.
   */
  #registryFiles(): Array<{ path: string; content: Buffer; mode: number }> {
    const certificates = [...this.#trustedRegistries].map(([address, certificate]) => ({
      path: `/etc/docker/certs.d/${address}/ca.crt`,
      content: Buffer.from(certificate),
      mode: 0o644,
    }));
    if (this.#dockerHubMirror === null) return certificates;
    const serviceSettings = `DOCKER_OPTS="--registry-mirror https://${this.#dockerHubMirror}"\n`;
    return [
      ...certificates,
      { path: '/etc/default/docker', content: Buffer.from(serviceSettings), mode: 0o644 },
    ];
  }

  async #createContainer(instanceId: string, name: string, kind: EmulatedHostKind): Promise<void> {
    const dockerDaemonArgs = hasDockerDaemon(kind)
      ? [...(await dockerDaemonRunOptions()), '--mount', await this.#dockerStoreMount(kind, name)]
      : [];
    const args = [
      'create',
      '--name',
      name,
      '--hostname',
      hostName(instanceId),
      '--network',
      this.network,
      // Reaps the orphans of the user data's background processes, as a VM's init does.
      '--init',
      // Docker's embedded DNS forwards names it does not know; nothing beyond the network answers.
      '--dns',
      '127.0.0.1',
      '--label',
      `${EMULATED_HOST_LABEL}=1`,
      '--label',
      `${EMULATED_HOST_INSTANCE_LABEL}=${instanceId}`,
      '--label',
      `${EMULATED_HOST_EMULATOR_LABEL}=${this.emulator}`,
      '--label',
      `${OWNER_LABEL}=${this.#owner}`,
      '--label',
      `${SESSION_LABEL}=${this.#session}`,
      ...dockerDaemonArgs,
      emulatedHostImage(kind),
    ];
    try {
      await runDocker(args);
    } catch (error) {
      // Another emulator's close may have removed the shared network between prepare and now.
      if (!(error instanceof DockerCommandError && /network .*not found/i.test(error.stderr))) throw error;
      await runDocker(['rm', '--force', '--volumes', name]).catch(() => undefined);
      await this.#ensureNetwork();
      await runDocker(args);
    }
  }

  /**
   * Where the host's daemon keeps its store: a volume Docker fills from the image, or for a
   * `dstack` host a directory made from the image's pre-pulled store (prepulled-docker-stores.ts).
   */
  async #dockerStoreMount(kind: EmulatedHostKind, containerName: string): Promise<string> {
    if (kind !== 'dstack') return 'type=volume,destination=/var/lib/docker';
    const store = await prepulledStoreFor(emulatedHostImage(kind), this.#session, containerName);
    return `type=bind,source=${store},destination=/var/lib/docker`;
  }

  /**
   * Removes the host's default route from a short-lived container that shares its network
   * namespace with NET_ADMIN (a plain host has no such capability). The boot script waits for the
   * route to be gone before it runs anything.
   */
  async #sealNetwork(containerName: string, kind: EmulatedHostKind): Promise<void> {
    const script = [
      'ip route del default 2>/dev/null',
      'ip -6 route del default 2>/dev/null',
      `if ip route | grep -q '^default' || ip -6 route 2>/dev/null | grep -q '^default'; then`,
      '  echo "a default route is left" >&2; exit 1',
      'fi',
    ].join('\n');
    await runDocker([
      'run',
      '--rm',
      '--network',
      `container:${containerName}`,
      '--cap-add',
      'NET_ADMIN',
      '--label',
      `${OWNER_LABEL}=${this.#owner}`,
      '--entrypoint',
      '/bin/sh',
      emulatedHostImage(kind),
      '-c',
      script,
    ]);
  }

  async #address(containerName: string): Promise<string> {
    const text = await runDocker([
      'inspect',
      '--format',
      '{{json .NetworkSettings.Networks}}',
      containerName,
    ]);
    const networks = JSON.parse(text) as Record<string, { IPAddress?: string }>;
    const address = networks[this.network]?.IPAddress;
    if (!address) throw new Error(`container ${containerName} has no address on network ${this.network}`);
    return address;
  }

  async #waitForSshd(instanceId: string, record: HostRecord, address: string): Promise<void> {
    const deadline = Date.now() + this.#sshdTimeoutMs;
    let lastError: unknown = null;
    for (let attempt = 0; ; attempt++) {
      this.#checkNotTerminated(instanceId, record);
      try {
        await sshdAnswers(address);
        return;
      } catch (error) {
        lastError = error;
      }
      // A host whose boot failed never answers: say so now rather than at the deadline.
      const running =
        attempt % 10 === 9 || Date.now() > deadline ? await this.#isRunning(record.containerName) : true;
      if (!running || Date.now() > deadline) {
        const logs = await runDocker(['logs', '--tail', '20', record.containerName]).catch(() => '');
        const why = running
          ? `sshd did not answer within ${this.#sshdTimeoutMs} ms`
          : 'the host stopped while booting';
        throw new Error(
          `emulated host for ${instanceId} (${address}): ${why}: ${(lastError as Error).message}${logs.trim() ? `; its output ends:\n${logs.trim()}` : ''}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, SSHD_POLL_MS));
    }
  }

  async #isRunning(containerName: string): Promise<boolean> {
    const state = await runDocker(['inspect', '--format', '{{.State.Running}}', containerName]).catch(
      () => 'false',
    );
    return state.trim() === 'true';
  }

  async #remove(record: HostRecord): Promise<void> {
    try {
      await runDocker(['rm', '--force', '--volumes', record.containerName]);
    } catch (error) {
      if (!(error instanceof DockerCommandError && error.isNotFound)) throw error;
    }
    await removePrepulledStore(this.#session, record.containerName);
  }

  /**
   * `mknod` of the device in the host container (it may use every device: `a *:* rwm`) and the
   * symlinks udev would make, so the host's tools (blkid, mkfs, mount) reach the real device.
   */
  async attachBlockDevice(instanceId: string, device: HostBlockDevice): Promise<void> {
    const record = this.#hosts.get(instanceId);
    if (!record || record.terminated) throw new Error(`instance ${instanceId} has no running host`);
    const script = [
      'set -e',
      `rm -f ${quote(device.path)}`,
      `mknod -m 660 ${quote(device.path)} b ${device.major} ${device.minor}`,
      // Relative, as udev makes them (`../../sdb`): readers join the target to the link's directory.
      ...device.links.flatMap((link) => [
        `mkdir -p ${quote(posix.dirname(link))}`,
        `ln -sfn ${quote(posix.relative(posix.dirname(link), device.path))} ${quote(link)}`,
      ]),
    ].join('\n');
    await runDocker(['exec', record.containerName, 'sh', '-c', script]);
  }

  async detachBlockDevice(instanceId: string, device: HostBlockDevice): Promise<void> {
    const record = this.#hosts.get(instanceId);
    if (!record || record.terminated) return;
    const paths = [device.path, ...device.links].map(quote).join(' ');
    await runDocker(['exec', record.containerName, 'rm', '-f', ...[device.path, ...device.links]]).catch(
      async (error: unknown) => {
        if (await this.#isRunning(record.containerName))
          throw new Error(`cannot remove ${paths}: ${String(error)}`);
      },
    );
  }

  /**
   * Runs `script` as root in the running host and answers its output: what a user with a root
   * shell on the machine does (a test kills a job's container with it).
   */
  async exec(instanceId: string, script: string): Promise<string> {
    const record = this.#hosts.get(instanceId);
    if (!record || record.terminated) throw new Error(`instance ${instanceId} has no running host`);
    return runDocker(['exec', record.containerName, 'sh', '-c', script]);
  }

  async terminate(instanceId: string): Promise<void> {
    const record = this.#hosts.get(instanceId);
    if (record === undefined) return;
    record.terminated = true;
    // Two `docker rm` of one container at once: the second fails ("removal already in progress").
    record.removal ??= this.#remove(record);
    try {
      await record.removal;
    } finally {
      if (this.#hosts.get(instanceId) === record) this.#hosts.delete(instanceId);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#hosts.keys()].map((instanceId) => this.terminate(instanceId)));
    // Hosts whose launch was cut short may have been created after the removal above.
    await runDocker(['ps', '--all', '--quiet', '--filter', `label=${SESSION_LABEL}=${this.#session}`])
      .then((ids) => {
        const left = ids.split('\n').filter((id) => id.trim() !== '');
        return left.length > 0 ? runDocker(['rm', '--force', '--volumes', ...left]) : '';
      })
      .catch(() => undefined);
    await removeSessionStores(this.#session);
    // The default network stays: test files running beside this one (and other checkouts on this
    // Docker) launch hosts on it, and a host created but not yet started holds no endpoint that
    // would stop its removal, so removing it failed their start ("network … not found").
    if (this.#madeNetwork && this.network !== DEFAULT_EMULATED_HOSTS_NETWORK) {
      // Another emulator's hosts may still use it; then it stays for them and later runs.
      await runDocker(['network', 'rm', this.network]).catch(() => undefined);
    }
    this.#madeNetwork = false;
  }
}

/** A shell word. */
function quote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
