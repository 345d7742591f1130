/**
 * A container-backend run end to end, on SQLite and on Postgres: a real server with
 * @dstack/backend-vastai, the Vast.ai emulator (the backend's undici client against it), and a
 * Docker container per rental started from the task's own `image:` with the exact entrypoint the
 * backend sent. The entrypoint downloads the runner's portable runtime from the server's
 * `DSTACK_RUNNER_DOWNLOAD_URL` (served on the rentals' network) and starts the runner; the
 * server logs in on the runner's mapped SSH port with the project key, the task runs, its output
 * streams back. Images without node (a static busybox, a musl one) are the point.
 */

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { InstanceOfferWithAvailability, Run } from '@dstack/core';
import {
  RUNNER_BUSYBOX_TEST_IMAGE as BUSYBOX_IMAGE,
  DockerVastaiContainers,
  ensureRunnerTestImages,
  RUNNER_MUSL_TEST_IMAGE as MUSL_IMAGE,
  type RunnerRuntimeServer,
  serveRunnerRuntime,
  startVastaiEmulator,
  type VastaiEmulator,
  vastaiEmulatorBackend,
} from '@dstack/testing/emulators';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { planJob } from './cloud-run-helpers.js';
import { requireBuiltDstack, runDstack } from './dstack-cli.js';
import { dockerMissing } from './emulated-hosts-harness.js';
import {
  ADMIN_TOKEN,
  applyTask,
  describeOnDatabase,
  type HarnessServer,
  makeTempDir,
  startHarnessServer,
  waitFor,
} from './server-harness.js';

/** The plan's deadline for a backend's offers, in seconds (the server's DSTACK_SERVER_OFFERS_DEADLINE). */
const OFFERS_DEADLINE_SECONDS = 2;

/** A task in `image` on the emulated marketplace (its asks all have GPUs). */
function vastTask(name: string, image: string, commands: string[], extra: Record<string, unknown> = {}) {
  return { type: 'task', name, image, commands, resources: { gpu: '1..' }, ...extra };
}

// What is tested is the marketplace and the rental, not the database: once, on Postgres (the
// AWS suite runs on Postgres too, GCP's on SQLite).
describeOnDatabase('postgres', { skip: dockerMissing })('a task on the emulated Vast.ai', (databaseUrl) => {
  let containers: DockerVastaiContainers;
  let runtime: RunnerRuntimeServer;
  let emulator: VastaiEmulator;
  let harness: HarnessServer;
  const temp = makeTempDir();

  beforeAll(async () => {
    await ensureRunnerTestImages();
    containers = new DockerVastaiContainers();
    runtime = await serveRunnerRuntime({ host: await containers.gateway() });
    emulator = await startVastaiEmulator({ containers });
    harness = await startHarnessServer({
      dir: temp.dir,
      config: { projects: [{ name: 'main', backends: [vastaiEmulatorBackend(emulator)] }] },
      databaseUrl: databaseUrl(),
      env: {
        DSTACK_RUNNER_DOWNLOAD_URL: runtime.url,
        DSTACK_SERVER_OFFERS_DEADLINE: String(OFFERS_DEADLINE_SECONDS),
      },
    });
  }, 300_000);

  afterAll(async () => {
    await harness?.terminateFleetsAndClose();
    await emulator?.close();
    await containers?.close();
    await runtime?.close();
    temp.remove();
  }, 300_000);

  function rentalOf(finished: Run): { contract: number; ask: string } {
    const data = finished.latest_job_submission?.job_provisioning_data;
    if (!data) throw new Error(`run ${finished.run_spec.run_name} has no provisioning data`);
    return { contract: Number(data.instance_id), ask: data.instance_type.name };
  }

  /** A container rental serves its one job: it is destroyed once the job ends. */
  async function expectRentalGone(runName: string, contract: number): Promise<void> {
    await waitFor(
      `the rental of ${runName} to be destroyed`,
      () => (emulator.state().instances.some((each) => each.id === contract) ? null : true),
      120_000,
    );
  }

  it('runs the task in its busybox image (no node) on the plan’s first offer, streams its output, and destroys the rental', async () => {
    const configuration = vastTask('vast-hello', BUSYBOX_IMAGE, [
      'echo hello from $(cat /etc/os-release | head -1)',
    ]);
    const { offers, warnings } = await planJob(harness, configuration);
    expect(warnings).toEqual([]);
    expect(offers.length).toBeGreaterThan(0);
    expect(offers.every((offer) => offer.backend === 'vastai')).toBe(true);

    await applyTask(harness, configuration);
    const running = await harness.waitForRun('vast-hello', ['running'], 180_000);
    const rental = rentalOf(running);
    const rented = emulator.state().instances.find((each) => each.id === rental.contract);
    expect(rented?.image).toBe(BUSYBOX_IMAGE);
    const finished = await harness.waitForRun('vast-hello', ['done', 'failed', 'terminated'], 180_000);
    expect(finished.status).toBe('done');
    expect(rental.ask).toBe(offers[0]?.instance.name);
    expect(await harness.logs('vast-hello')).toMatch(/hello from .*busybox/i);
    await expectRentalGone('vast-hello', rental.contract);
  }, 300_000);

  it('runs a musl program in a musl image', async () => {
    await applyTask(harness, vastTask('vast-musl', MUSL_IMAGE, ['/usr/bin/hello-musl', 'echo musl done']));
    const finished = await harness.waitForRun('vast-musl', ['done', 'failed', 'terminated'], 180_000);
    expect(finished.status).toBe('done');
    expect(await harness.logs('vast-musl')).toContain('musl done');
    await expectRentalGone('vast-musl', rentalOf(finished).contract);
  }, 300_000);

  it('fails a run whose image cannot be pulled as soon as the rental says so, with Docker’s error in the API and dstack ps', async () => {
    // Not on this machine and never pulled: the rental stays `loading` with Docker's pull error.
    const missing = 'dstack-test/no-such-image:1';
    await applyTask(harness, vastTask('vast-no-image', missing, ['echo never']));
    const finished = await harness.waitForRun('vast-no-image', ['done', 'failed', 'terminated'], 180_000);

    expect(finished.status).toBe('failed');
    const submission = finished.latest_job_submission;
    expect(submission?.termination_reason).toBe('creating_container_error');
    expect(submission?.status_message).toBe('error');
    expect(submission?.termination_reason_message).toBe(
      "the image could not be pulled: Error response from daemon: pull access denied for dstack-test/no-such-image, repository does not exist or may require 'docker login': denied: requested access to the resource is denied",
    );
    expect(finished.error).toBe(submission?.termination_reason_message);
    await expectRentalGone('vast-no-image', rentalOf(finished).contract);

    requireBuiltDstack();
    const cliDir = join(temp.dir, 'cli');
    mkdirSync(cliDir, { recursive: true });
    writeFileSync(
      join(cliDir, 'config.yml'),
      stringify({ projects: [{ name: 'main', url: harness.server.url, token: ADMIN_TOKEN, default: true }] }),
    );
    const ps = await runDstack(['ps', '-a', '-v'], { env: { DSTACK_CLI_CONFIG_DIR: cliDir } });
    expect(ps.stdout).toMatch(
      /^vast-no-image\s.*error\s.*the image could not be pulled: .*pull access denied/m,
    );
  }, 300_000);

  it('moves on to the next offer when the ask vanishes before the rental', async () => {
    const configuration = vastTask('vast-vanish', BUSYBOX_IMAGE, ['echo landed']);
    const { offers } = await planJob(harness, configuration);
    const [first, second] = offers;
    if (!first || !second) throw new Error('the plan has fewer than two offers');
    const fault = emulator.addFault({ code: 'ASK_VANISHED', askId: Number(first.instance.name), count: 1 });
    try {
      await applyTask(harness, configuration);
      const finished = await harness.waitForRun('vast-vanish', ['done', 'failed', 'terminated'], 180_000);
      expect(finished.status).toBe('done');
      expect(rentalOf(finished).ask).not.toBe(first.instance.name);
      expect(emulator.state().asks).not.toContain(Number(first.instance.name));
      await expectRentalGone('vast-vanish', rentalOf(finished).contract);
    } finally {
      emulator.removeFault(fault.id);
    }
  }, 300_000);

  it('ends an outbid interruptible rental’s job interrupted and resubmits it under retry', async () => {
    await applyTask(
      harness,
      vastTask('vast-spot', BUSYBOX_IMAGE, ['sleep 3', 'echo survived'], {
        spot_policy: 'spot',
        retry: { on_events: ['interruption'], duration: '1h' },
      }),
    );
    const running = await harness.waitForRun('vast-spot', ['running'], 180_000);
    const first = rentalOf(running);
    expect(emulator.state().instances.find((each) => each.id === first.contract)?.bid).not.toBeNull();
    emulator.outbid(first.contract);

    const finished = await harness.waitForRun('vast-spot', ['done', 'failed', 'terminated'], 240_000);
    expect(finished.status).toBe('done');
    const submissions = finished.jobs[0]?.job_submissions ?? [];
    expect(submissions.map((submission) => submission.termination_reason)).toEqual([
      'interrupted_by_no_capacity',
      'done_by_runner',
    ]);
    expect(rentalOf(finished).contract).not.toBe(first.contract);
    await expectRentalGone('vast-spot', rentalOf(finished).contract);
    expect(emulator.state().instances.some((each) => each.id === first.contract)).toBe(false);
  }, 420_000);

  it('leaves a slow marketplace out of the plan with a warning instead of waiting for it', async () => {
    // Requirements no earlier plan asked: the backend keeps a search's offers per requirements.
    const unasked = { resources: { gpu: '1..', cpu: '3..' } };
    const fault = emulator.addFault({ code: 'SLOW_RESPONSE', route: 'search', delayMs: 5000 });
    try {
      const configuration = vastTask('vast-slow', BUSYBOX_IMAGE, ['true'], unasked);
      const { offers, warnings } = await planJob(harness, configuration);
      const listed = await harness.call<{ offers: unknown[]; warnings: string[] }>(
        '/api/project/main/offers/list',
        { configuration },
      );

      expect(offers).toEqual([]);
      expect(warnings).toEqual([
        `Offers of backend vastai are missing: the backend did not answer within ${OFFERS_DEADLINE_SECONDS} s`,
      ]);
      expect(listed.status).toBe(200);
      expect(listed.body.offers).toEqual([]);
      expect(listed.body.warnings).toEqual(warnings);
    } finally {
      emulator.removeFault(fault.id);
    }
    // Once the marketplace answers in time again, so do the plan and `dstack offer --backend vastai`.
    expect(
      (await planJob(harness, vastTask('vast-slow', BUSYBOX_IMAGE, ['true'], unasked))).offers.length,
    ).toBeGreaterThan(0);
    const live = await harness.call<{ offers: InstanceOfferWithAvailability[]; warnings: string[] }>(
      '/api/project/main/offers/list',
      { configuration: { type: 'task', backends: ['vastai'], resources: { gpu: 'H100' } } },
    );
    expect(live.body.warnings).toEqual([]);
    expect(live.body.offers.length).toBeGreaterThan(0);
    expect(live.body.offers.every((each) => each.instance.resources.gpus[0]?.name === 'H100')).toBe(true);
  }, 120_000);
});
