/**
 * RunPod end to end, through the CLI: a real server with @dstack/backend-runpod planning from the
 * RunPod emulator's gpuhunt bucket (`catalog.url`, as `pnpm emulator runpod --server-config`
 * writes it) and deploying pods over its GraphQL API; each pod is a Docker container of the task's
 * own image whose docker command (the backend's `dockerArgs`) downloads the runner's portable
 * runtime from the server's `DSTACK_RUNNER_DOWNLOAD_URL` and starts it; the server logs in on the
 * pod's mapped SSH port with the project key. Once, on SQLite: the subject is the provider.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  RUNNER_BUSYBOX_TEST_IMAGE as BUSYBOX_IMAGE,
  DockerRunpodPods,
  ensureRunnerTestImages,
  type RunnerRuntimeServer,
  type RunpodEmulator,
  runpodEmulatorBackend,
  serveRunnerRuntime,
  startRunpodEmulator,
} from '@dstack/testing/emulators';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { planJob, provisionedInstance } from './cloud-run-helpers.js';
import { requireBuiltDstack, runDstack } from './dstack-cli.js';
import { dockerMissing } from './emulated-hosts-harness.js';
import {
  ADMIN_TOKEN,
  describeOnDatabase,
  type HarnessServer,
  makeTempDir,
  startHarnessServer,
  waitFor,
} from './server-harness.js';

/** A one-GPU task in the busybox image (no node in it: the runner brings its own runtime). */
function gpuTask(name: string, commands: string[]) {
  return { type: 'task', name, image: BUSYBOX_IMAGE, commands, resources: { gpu: 1 } };
}

describeOnDatabase('sqlite', { skip: dockerMissing })(
  'a task on the emulated RunPod, through the CLI',
  (databaseUrl) => {
    let pods: DockerRunpodPods;
    let runtime: RunnerRuntimeServer;
    let emulator: RunpodEmulator;
    let harness: HarnessServer;
    const temp = makeTempDir();
    const cli = { DSTACK_CLI_CONFIG_DIR: join(temp.dir, 'cli') };

    beforeAll(async () => {
      requireBuiltDstack();
      await ensureRunnerTestImages();
      pods = new DockerRunpodPods();
      runtime = await serveRunnerRuntime({ host: await pods.gateway() });
      emulator = await startRunpodEmulator({ containers: pods });
      harness = await startHarnessServer({
        dir: temp.dir,
        config: {
          projects: [{ name: 'main', backends: [runpodEmulatorBackend(emulator)] }],
          catalog: { url: emulator.catalogUrl },
        },
        databaseUrl: databaseUrl(),
        env: { DSTACK_RUNNER_DOWNLOAD_URL: runtime.url },
      });
      mkdirSync(cli.DSTACK_CLI_CONFIG_DIR, { recursive: true });
      writeFileSync(
        join(cli.DSTACK_CLI_CONFIG_DIR, 'config.yml'),
        stringify({
          projects: [{ name: 'main', url: harness.server.url, token: ADMIN_TOKEN, default: true }],
        }),
      );
    }, 300_000);

    afterAll(async () => {
      await harness?.terminateFleetsAndClose();
      await emulator?.close();
      await pods?.close();
      await runtime?.close();
      temp.remove();
    }, 300_000);

    function writeTask(name: string, commands: string[]): string {
      const file = join(temp.dir, `${name}.dstack.yml`);
      writeFileSync(file, stringify(gpuTask(name, commands)));
      return file;
    }

    it('answers dstack offer --gpu 1 -b runpod with the Secure Cloud offers of the gpuhunt catalog, cheapest first', async () => {
      const { offers, warnings } = await planJob(harness, gpuTask('runpod-plan', ['true']));
      const offered = await runDstack(['offer', '--gpu', '1', '-b', 'runpod'], { env: cli });

      expect(warnings).toEqual([]);
      expect(offers.length).toBeGreaterThan(1);
      expect(offers.every((offer) => offer.backend === 'runpod' && offer.region.includes('-'))).toBe(true);
      const prices = offers.map((offer) => offer.price);
      expect(prices).toEqual([...prices].sort((left, right) => left - right));
      expect(offered.code, offered.stderr).toBe(0);
      expect(offered.stdout).toMatch(
        /^1\s+runpod\s+CA-MTL-1\s+4xCPU, 31GB, 1xA4000 \(16GB\).*NVIDIA RTX A4000\s+\$0\.25\s+available$/m,
      );
    }, 120_000);

    it('runs the task on the cheapest offer with its output streamed, and leaves nothing running once the fleet is deleted', async () => {
      const { offers } = await planJob(harness, gpuTask('runpod-hello', ['true']));
      const applied = await runDstack(
        ['apply', '-f', writeTask('runpod-hello', ['echo hello from $RUNPOD_POD_ID']), '-y'],
        {
          env: cli,
        },
      );

      expect(applied.code, applied.stderr).toBe(0);
      expect(applied.stdout).toMatch(/hello from [0-9a-f]{14}/);
      const run = await harness.waitForRun('runpod-hello', ['done', 'failed', 'terminated'], 180_000);
      expect(run.status).toBe('done');
      const pod = provisionedInstance(run);
      expect({ type: pod.type, region: pod.region }).toEqual({
        type: offers[0]?.instance.name,
        region: offers[0]?.region,
      });

      const fleets = await harness.call<Array<{ name: string }>>('/api/project/main/fleets/list');
      for (const fleet of fleets.body) {
        const deleted = await runDstack(['fleet', 'delete', fleet.name, '-y'], { env: cli });
        expect(deleted.code, deleted.stderr).toBe(0);
      }
      await waitFor(
        'every pod to be terminated',
        () => (emulator.state().pods.length === 0 ? true : null),
        120_000,
      );
    }, 300_000);

    it('moves on to the next offer when RunPod has no machine left for the cheapest', async () => {
      const { offers } = await planJob(harness, gpuTask('runpod-next', ['true']));
      const cheapest = offers[0];
      if (!cheapest) throw new Error('no offer');
      const fault = emulator.addFault({ code: 'NO_CAPACITY', gpuTypeId: cheapest.instance.name });
      try {
        const applied = await runDstack(['apply', '-f', writeTask('runpod-next', ['echo landed']), '-y'], {
          env: cli,
        });
        expect(applied.code, applied.stderr).toBe(0);
        const run = await harness.waitForRun('runpod-next', ['done', 'failed', 'terminated'], 180_000);
        expect(run.status).toBe('done');
        expect(provisionedInstance(run).type).not.toBe(cheapest.instance.name);
        expect(await harness.logs('runpod-next')).toContain('landed');
      } finally {
        emulator.removeFault(fault.id);
      }
      await waitFor(
        'every pod to be terminated',
        () => (emulator.state().pods.length === 0 ? true : null),
        120_000,
      );
    }, 300_000);
  },
);
