import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DockerEngineClient } from '../docker-engine-client.js';
import { imageExists } from '../docker-images.js';

const run = promisify(execFile);

/** The offline image `packages/shim/test-image/build-test-image.sh` builds. */
export const TEST_IMAGE = 'dstack-test/runner-base:latest';

const REPOSITORY_ROOT = fileURLToPath(new URL('../../../../../../', import.meta.url));
const ENSURE_DOCKERD = `${REPOSITORY_ROOT}scripts/services/ensure-dockerd.sh`;

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
