/**
 * End to end: jobs on the local backend's Docker runtime pull their images from a registry that
 * checks credentials (Debian's docker-registry on loopback, see @dstack/testing's
 * local-docker-registry): the default image of `python:` from the mirror `DSTACK_BASE_IMAGE`
 * names, a private image with `registry_auth` (from secrets too), and the pulls that cannot
 * succeed (wrong credentials, a missing image) fail the job at once, saying why.
 */
import { defaultJobImage } from '@dstack/core/agent-protocol';
import {
  ensureRunnerTestImages,
  type LocalDockerRegistry,
  localDockerRegistryMissing,
  RUNNER_BUSYBOX_TEST_IMAGE,
  startLocalDockerRegistry,
} from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dockerMissing } from './emulated-hosts-harness.js';
import { applyTask, type HarnessServer, makeTempDir, startHarnessServer, task } from './server-harness.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 300_000 });

const registryMissing = await localDockerRegistryMissing();
/** Baked into the images pushed to the registry: a job that prints it ran in the pulled image. */
const MARKER_PATH = '/etc/dstack-test-image';

describe.skipIf(dockerMissing || (registryMissing !== null && process.env.CI !== 'true'))(
  'jobs pulling images from a registry that checks credentials',
  () => {
    const temp = makeTempDir('dstack-image-registry-');
    let registry: LocalDockerRegistry;
    let harness: HarnessServer;
    let privateImage: string;

    beforeAll(async () => {
      await ensureRunnerTestImages();
      registry = await startLocalDockerRegistry();
      await registry.push(RUNNER_BUSYBOX_TEST_IMAGE, defaultJobImage({ python: '3.11' }), {
        [MARKER_PATH]: 'the mirror default image for python 3.11\n',
      });
      privateImage = await registry.push(RUNNER_BUSYBOX_TEST_IMAGE, 'private/img:v1', {
        [MARKER_PATH]: 'the private image\n',
      });
      harness = await startHarnessServer({
        dir: temp.dir,
        config: {
          projects: [
            {
              name: 'main',
              backends: [{ type: 'local', runtime: 'docker', instances_dir: `${temp.dir}/instances` }],
            },
          ],
        },
        env: { DSTACK_BASE_IMAGE: `${registry.address}/dstackai/base` },
      });
      const secret = await harness.call('/api/project/main/secrets/create_or_update', {
        name: 'registry_password',
        value: registry.password,
      });
      expect(secret.status).toBe(200);
    });

    afterAll(async () => {
      await harness?.terminateFleetsAndClose();
      await registry?.stop();
      temp.remove();
    });

    async function finished(name: string, configuration: Record<string, unknown>) {
      await applyTask(harness, configuration);
      const run = await harness.waitForRun(name, ['done', 'failed', 'terminated'], 120_000);
      return { run, output: await harness.logs(name), job: run.latest_job_submission };
    }

    it('runs a task without `image:` in the default image of its `python:`, pulled from the mirror', async () => {
      const { run, output, job } = await finished(
        'default-image',
        // The test registry checks credentials for every pull, the mirror's too.
        task('default-image', [`cat ${MARKER_PATH}`], {
          python: '3.11',
          registry_auth: { username: registry.username, password: registry.password },
        }),
      );
      expect(run.status, job?.termination_reason_message ?? '').toBe('done');
      expect(output).toContain('the mirror default image for python 3.11');
    });

    it('runs a task in a private image with `registry_auth`, its password from a secret', async () => {
      const { run, output, job } = await finished(
        'private-image',
        task('private-image', [`cat ${MARKER_PATH}`], {
          image: privateImage,
          registry_auth: {
            username: registry.username,
            // biome-ignore lint/suspicious/noTemplateCurlyInString: dstack's secret reference, sent as written.
            password: '${{ secrets.registry_password }}',
          },
        }),
      );
      expect(run.status, job?.termination_reason_message ?? '').toBe('done');
      expect(output).toContain('the private image');
    });

    it('fails a job whose credentials the registry refuses, saying so', async () => {
      await registry.removePulledImages();
      const { run, job } = await finished(
        'wrong-credentials',
        task('wrong-credentials', ['true'], {
          image: privateImage,
          registry_auth: { username: registry.username, password: 'not-the-password' },
        }),
      );
      expect(run.status).toBe('failed');
      expect(job?.termination_reason).toBe('creating_container_error');
      expect(job?.termination_reason_message).toContain(privateImage);
      expect(job?.termination_reason_message).toMatch(
        /the registry refused the credentials \(registry_auth\)/,
      );
    });

    it('fails a job whose image does not exist, naming the image', async () => {
      const missing = `${registry.address}/private/missing:v1`;
      const { run, job } = await finished(
        'missing-image',
        task('missing-image', ['true'], {
          image: missing,
          registry_auth: { username: registry.username, password: registry.password },
        }),
      );
      expect(run.status).toBe('failed');
      expect(job?.termination_reason).toBe('creating_container_error');
      expect(job?.termination_reason_message).toContain(missing);
      expect(job?.termination_reason_message).toMatch(/the image does not exist in its registry/);
    });
  },
);
