import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DockerEngineClient } from '../docker-engine-client.js';
import { imageExists } from '../docker-images.js';

const run = promisify(execFile);

/** The offline image `packages/shim/test-image/build-test-image.sh` builds: a static busybox, no shared library. */
export const TEST_IMAGE = 'dstack-test/runner-busybox:v2';
/** Its musl flavour (`--flavor musl`): musl's loader and libc at Alpine's paths, and a program linked against them. */
export const MUSL_TEST_IMAGE = 'dstack-test/runner-musl:v2';

const REPOSITORY_ROOT = fileURLToPath(new URL('../../../../../../', import.meta.url));
const ENSURE_DOCKERD = `${REPOSITORY_ROOT}scripts/services/ensure-dockerd.sh`;
const BUILD_TEST_IMAGE = `${REPOSITORY_ROOT}packages/shim/test-image/build-test-image.sh`;

/**
 * Builds the musl test image when it is missing (the daemon must answer). Reports why it cannot
 * instead of throwing, as {@link prepareDockerForTests} does.
 */
export async function prepareMuslTestImage(): Promise<DockerTestEnvironment> {
  try {
    await run('bash', [BUILD_TEST_IMAGE, '--flavor', 'musl'], { timeout: 300_000 });
    return { available: true };
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    return {
      available: false,
      reason: `the musl test image cannot be built: ${stderr || (error as Error).message}`,
    };
  }
}

export type DockerTestEnvironment = { available: true } | { available: false; reason: string };

/**
 * Makes sure a Docker daemon answers and the test image exists, starting dockerd (and building
 * the image) with scripts/services/ensure-dockerd.sh when they do not. Reports why Docker is
 * unusable instead of throwing, so the tests can skip with that reason.
 */
export async function prepareDockerForTests(): Promise<DockerTestEnvironment> {
  const client = new DockerEngineClient();
  try {
    if ((await daemonAnswers(client)) && (await imageExists(client, TEST_IMAGE))) {
      return { available: true };
    }
    try {
      await run('bash', [ENSURE_DOCKERD], { timeout: 300_000 });
    } catch (error) {
      const stderr = (error as { stderr?: string }).stderr?.trim();
      return {
        available: false,
        reason: `Docker is missing: ${stderr || (error as Error).message}`,
      };
    }
    if (!(await daemonAnswers(client))) {
      return { available: false, reason: `Docker is missing: no daemon answers on ${client.socketPath}` };
    }
    return { available: true };
  } finally {
    await client.close();
  }
}

async function daemonAnswers(client: DockerEngineClient): Promise<boolean> {
  try {
    await client.apiVersion();
    return true;
  } catch {
    return false;
  }
}
