/**
 * A GCP run end to end, on SQLite and on Postgres: a real server with @dstack/backend-gcp, the
 * Compute Engine emulator (google-auth-library's token exchange and Compute REST against it), and
 * an emulated host per instance (a Docker container running the exact `user-data`: it downloads
 * the shim from the server's `DSTACK_SHIM_DOWNLOAD_URL`, served on the hosts' bridge). The task
 * lands on the cheapest zone, a late pool exhaustion moves it to the next offer, a preempted spot
 * job is resubmitted under `retry`, and deleting the fleet leaves no instance and no host.
 */

import {
  DockerEmulatedHosts,
  type GcpEmulator,
  gcpEmulatorBackend,
  type ShimTarballServer,
  serveShimTarball,
  startGcpEmulator,
} from '@dstack/testing/emulators';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deleteFleet, gpuTask, planJob, provisionedInstance } from './cloud-run-helpers.js';
import { dockerMissing, hostsLeft } from './emulated-hosts-harness.js';
import {
  applyTask,
  describeEachDatabase,
  type HarnessServer,
  makeTempDir,
  startHarnessServer,
  waitFor,
} from './server-harness.js';

/**
 * The label value of this file's hosts, so the check for leftovers sees no other test's; the
 * hosts' containers are named after it, so a test run beside another on the same Docker meets none of its hosts.
 */
const EMULATOR_NAME = `gcp-e2e-${process.pid}`;

describeEachDatabase.skipIf(dockerMissing)('a task on the emulated GCP', (databaseUrl) => {
  let hosts: DockerEmulatedHosts;
  let tarball: ShimTarballServer;
  let emulator: GcpEmulator;
  let harness: HarnessServer;
  const temp = makeTempDir();

  beforeAll(async () => {
    hosts = new DockerEmulatedHosts({ emulator: EMULATOR_NAME });
    tarball = await serveShimTarball(hosts);
    emulator = await startGcpEmulator({ hosts, regions: ['us-central1', 'europe-west4'] });
    harness = await startHarnessServer({
      dir: temp.dir,
      config: { projects: [{ name: 'main', backends: [gcpEmulatorBackend(emulator)] }] },
      databaseUrl: databaseUrl(),
      env: { DSTACK_SHIM_DOWNLOAD_URL: tarball.url },
    });
  }, 300_000);

  afterAll(async () => {
    await harness?.terminateFleetsAndClose();
    await emulator?.close();
    await hosts?.close();
    await tarball?.close();
    temp.remove();
  }, 300_000);

  it('lands on the cheapest zone, streams the output, and leaves nothing after fleet delete', async () => {
    const configuration = gpuTask('gcp-hello', ['echo hello from the emulated gce']);
    const [cheapest] = (await planJob(harness, configuration)).offers;
    expect(cheapest?.backend).toBe('gcp');
    await applyTask(harness, configuration);
    const finished = await harness.waitForRun('gcp-hello', ['done', 'failed', 'terminated'], 180_000);
    expect(finished.status).toBe('done');
    const instance = provisionedInstance(finished);
    expect({ type: instance.type, region: instance.region, zone: instance.zone }).toEqual({
      type: cheapest?.instance.name,
      region: cheapest?.region,
      zone: cheapest?.availability_zones?.[0],
    });
    expect(await harness.logs('gcp-hello')).toContain('hello from the emulated gce');

    await deleteFleet(harness, 'gcp-hello');
    await waitFor(
      'the instance to be deleted',
      () => (emulator.state().instances.some((each) => each.id === instance.id) ? null : true),
      120_000,
    );
    expect(emulator.state().instances.filter((each) => each.state === 'RUNNING')).toEqual([]);
    expect(await hostsLeft(EMULATOR_NAME)).toEqual([]);
  }, 300_000);

  it('moves on to the next offer when the cheapest reports pool exhaustion late', async () => {
    const configuration = gpuTask('gcp-capacity', ['echo landed']);
    const [cheapest, next] = (await planJob(harness, configuration)).offers;
    if (!cheapest || !next) throw new Error('the plan has fewer than two offers');
    // In every zone of the cheapest offer, the insert answers a RUNNING operation that fails later.
    for (const zone of cheapest.availability_zones ?? []) {
      emulator.addFault({
        code: 'ZONE_RESOURCE_POOL_EXHAUSTED',
        machineType: cheapest.instance.name,
        provisioningModel: 'STANDARD',
        zone,
        delayMs: 1500,
      });
    }
    try {
      await applyTask(harness, configuration);
      const finished = await harness.waitForRun('gcp-capacity', ['done', 'failed', 'terminated'], 180_000);
      expect(finished.status).toBe('done');
      const instance = provisionedInstance(finished);
      expect({ type: instance.type, region: instance.region }).toEqual({
        type: next.instance.name,
        region: next.region,
      });
    } finally {
      emulator.clearFaults();
    }
    await deleteFleet(harness, 'gcp-capacity');
  }, 300_000);

  it('resubmits a preempted spot job under retry on interruption', async () => {
    await applyTask(
      harness,
      gpuTask('gcp-spot', ['sleep 3', 'echo survived'], {
        spot_policy: 'spot',
        retry: { on_events: ['interruption'], duration: '1h' },
      }),
    );
    const running = await harness.waitForRun('gcp-spot', ['running'], 180_000);
    const first = provisionedInstance(running);
    expect(emulator.state().instances.find((each) => each.id === first.id)?.market).toBe('SPOT');
    emulator.preemptInstance(first.id);

    const finished = await harness.waitForRun('gcp-spot', ['done', 'failed', 'terminated'], 240_000);
    expect(finished.status).toBe('done');
    const submissions = finished.jobs[0]?.job_submissions ?? [];
    expect(submissions.map((submission) => submission.termination_reason)).toEqual([
      'interrupted_by_no_capacity',
      'done_by_runner',
    ]);
    expect(provisionedInstance(finished).id).not.toBe(first.id);
    await deleteFleet(harness, 'gcp-spot');
    expect(emulator.state().instances.filter((each) => each.state === 'RUNNING')).toEqual([]);
  }, 420_000);
});
