/**
 * End to end: jobs on the local backend's Docker runtime pull their images from a registry that
 * checks credentials (Debian's docker-registry on loopback, see @dstack/testing's
 * local-docker-registry): dstack's base image (its test stand-in) from the mirror
 * `DSTACK_DOCKER_BASE_IMAGE` names, where the commands run under bash in the venv of `python:`,
 * `shell:` and `entrypoint:` as dstack runs them, a private image with `registry_auth` (from
 * secrets too), and the pulls that cannot succeed (wrong credentials, a missing image) fail the
 * job at once, saying why.
 */
import { defaultJobImage } from '@dstack/core/agent-protocol';
import {
  DEFAULT_IMAGE_MARKER,
  ensureBaseImageStandIn,
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
      await registry.pushCompressed(await ensureBaseImageStandIn(), defaultJobImage());
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
        env: { DSTACK_DOCKER_BASE_IMAGE: `${registry.address}/dstackai/base` },
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

    it("runs a task without `image:` in dstack's base image from the mirror, under bash, in the venv of its `python:`", async () => {
      const { run, output, job } = await finished(
        'default-image',
        // The test registry checks credentials for every pull, the mirror's too.
        task(
          'default-image',
          [`cat ${MARKER_PATH}`, 'echo "bash $BASH_VERSION"', 'python --version', 'command -v python'],
          { python: '3.11', registry_auth: { username: registry.username, password: registry.password } },
        ),
      );
      expect(run.status, job?.termination_reason_message ?? '').toBe('done');
      expect(output).toContain(DEFAULT_IMAGE_MARKER);
      expect(output).toMatch(/bash 5\./);
      expect(output).toContain('Python 3.11.');
      expect(output).toContain('/dstack/venv/bin/python');
    });

    it('runs `shell: sh` and an `entrypoint:` with the commands as its arguments, as dstack does', async () => {
      const auth = { registry_auth: { username: registry.username, password: registry.password } };
      const [inSh, entrypoint] = await Promise.all([
        finished(
          'shell-sh',
          // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell's parameter expansion.
          task('shell-sh', ['echo "bash=${BASH_VERSION:-none}"'], { shell: 'sh', ...auth }),
        ),
        finished('entrypoint', task('entrypoint', ['a b', 'c'], { entrypoint: "printf '[%s]\\n'", ...auth })),
      ]);
      expect(inSh.run.status, inSh.job?.termination_reason_message ?? '').toBe('done');
      expect(inSh.output).toContain('bash=none');
      expect(entrypoint.run.status, entrypoint.job?.termination_reason_message ?? '').toBe('done');
      expect(entrypoint.output).toContain('[a b]\n[c]');
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
