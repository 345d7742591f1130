/**
 * dstack's default image (`dstackai/base:0.15-base-ubuntu24.04`) where emulated hosts pull it:
 * nothing can be pulled from Docker Hub here, so a public registry of the test's serves the
 * image's stand-in (base-image-stand-in.ts: Debian with bash, sudo, git, openssh, python3 and a
 * stand-in for uv) under dstack's name. The server points at it with `DSTACK_DOCKER_BASE_IMAGE`,
 * as an air-gapped user points at a mirror.
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
  /** The value for the server's `DSTACK_DOCKER_BASE_IMAGE`: dstackai/base on the hosts' side of the registry. */
  readonly baseImage: string;
  /** What `cat TEST_IMAGE_MARKER_PATH` prints in the default image. */
  readonly marker: string;
  stop(): Promise<void>;
}

/** Serves dstack's default image to `hosts`, without credentials. */
export async function serveDefaultImages(hosts: DockerEmulatedHosts): Promise<DefaultImageRegistry> {
  const standIn = await ensureBaseImageStandIn();
  const registry = await startLocalDockerRegistry({ anonymous: true, hosts });
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
