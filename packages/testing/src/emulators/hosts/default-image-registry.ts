/**
 * dstack's default image (`dstackai/base:0.15-base-ubuntu24.04`) where emulated hosts pull it:
 * nothing can be pulled from Docker Hub here, so a public registry of the test's serves the
 * image's stand-in (base-image-stand-in.ts: Debian with bash, sudo, git, openssh, python3 and a
 * stand-in for uv) under dstack's name, as the hosts' Docker Hub (their daemons' mirror of it):
 * a server with dstack's defaults names the image, and a host pulls it, by its real name. Hosts
 * booted from dstack's own VM images have it pre-pulled (the `dstack` host kind) and pull nothing.
 */
import { defaultJobImage } from '@dstack/core/agent-protocol';
import { ensureBaseImageStandIn } from './base-image-stand-in.js';
import type { DockerEmulatedHosts } from './docker-emulated-hosts.js';
import { type LocalDockerRegistry, startLocalDockerRegistry } from './local-docker-registry.js';

/** The file in every image a test registry serves that says which image it is. */
export const TEST_IMAGE_MARKER_PATH = '/etc/dstack-test-image';

/** What `cat TEST_IMAGE_MARKER_PATH` prints in the default image (the stand-in's build writes it). */
export const DEFAULT_IMAGE_MARKER = 'the test stand-in of dstackai/base\n';

export interface DefaultImageRegistry {
  readonly registry: LocalDockerRegistry;
  /**
   * dstackai/base on the hosts' side of the registry: for a server that names its mirror
   * (`DSTACK_DOCKER_BASE_IMAGE`) rather than relying on the hosts' Docker Hub.
   */
  readonly baseImage: string;
  /** What `cat TEST_IMAGE_MARKER_PATH` prints in the default image. */
  readonly marker: string;
  stop(): Promise<void>;
}

/** Serves dstack's default image to `hosts`, without credentials. */
export async function serveDefaultImages(hosts: DockerEmulatedHosts): Promise<DefaultImageRegistry> {
  const standIn = await ensureBaseImageStandIn();
  const registry = await startLocalDockerRegistry({ anonymous: true, hosts, dockerHub: true });
  try {
    // Compressed once per machine: every test file's registry serves the same layers.
    await registry.pushCompressed(standIn, defaultJobImage());
  } catch (error) {
    await registry.stop();
    throw error;
  }
  return {
    registry,
    baseImage: `${registry.hostsAddress}/dstackai/base`,
    marker: DEFAULT_IMAGE_MARKER,
    stop: () => registry.stop(),
  };
}
