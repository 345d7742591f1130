/**
 * dstack's default images (`dstackai/base:py{python}-…`) where emulated hosts pull them: nothing
 * can be pulled from Docker Hub here, so a public registry of the test's serves the runner test
 * image (a static busybox: the runner brings its own runtime) under the default images' names,
 * each with a marker file a job can print to prove which image it ran in. The server points at it
 * with `DSTACK_BASE_IMAGE`, as an air-gapped user points at a mirror.
 */
import { DEFAULT_IMAGE_PYTHON, defaultJobImage } from '@dstack/core/agent-protocol';
import type { DockerEmulatedHosts } from './docker-emulated-hosts.js';
import { type LocalDockerRegistry, startLocalDockerRegistry } from './local-docker-registry.js';
import { ensureRunnerTestImages, RUNNER_BUSYBOX_TEST_IMAGE } from './runner-test-images.js';

/** The file in every image a test registry serves that says which image it is. */
export const TEST_IMAGE_MARKER_PATH = '/etc/dstack-test-image';

export interface DefaultImageRegistry {
  readonly registry: LocalDockerRegistry;
  /** The value for the server's `DSTACK_BASE_IMAGE`: dstackai/base on the hosts' side of the registry. */
  readonly baseImage: string;
  /** What `cat TEST_IMAGE_MARKER_PATH` prints in the default image of `python`. */
  marker(python?: string): string;
  stop(): Promise<void>;
}

export function defaultImageMarker(python: string = DEFAULT_IMAGE_PYTHON): string {
  return `the default image of python ${python}\n`;
}

/** Serves the default images of `pythons` (default: the default Python's) to `hosts`, without credentials. */
export async function serveDefaultImages(
  hosts: DockerEmulatedHosts,
  pythons: readonly string[] = [DEFAULT_IMAGE_PYTHON],
): Promise<DefaultImageRegistry> {
  await ensureRunnerTestImages();
  const registry = await startLocalDockerRegistry({ anonymous: true, hosts });
  try {
    for (const python of pythons) {
      await registry.push(RUNNER_BUSYBOX_TEST_IMAGE, defaultJobImage({ python }), {
        [TEST_IMAGE_MARKER_PATH]: defaultImageMarker(python),
      });
    }
  } catch (error) {
    await registry.stop();
    throw error;
  }
  return {
    registry,
    baseImage: `${registry.hostsAddress}/dstackai/base`,
    marker: defaultImageMarker,
    stop: () => registry.stop(),
  };
}
