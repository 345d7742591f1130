/**
 * A cloud run end to end, on SQLite and on Postgres: a real server with @dstack/backend-aws, the
 * EC2 emulator (the real AWS SDK against it), and an emulated host per instance (a Docker
 * container running the exact user data: it downloads the shim from the server's
 * `DSTACK_SHIM_DOWNLOAD_URL`, served on the hosts' bridge). The server reaches the shim over
 * SSH with the project key, the task runs, its output streams back, and deleting the fleet
 * leaves no instance running and no host behind.
 */

import {
  type AwsEmulator,
  awsEmulatorBackend,
  DockerEmulatedHosts,
  type ShimTarballServer,
  serveShimTarball,
  startAwsEmulator,
} from '@dstack/testing/emulators';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ServerConfigInput } from '../src/config/server-config.js';
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
const EMULATOR_NAME = `aws-e2e-${process.pid}`;

function awsConfig(emulator: AwsEmulator): ServerConfigInput {
  return { projects: [{ name: 'main', backends: [awsEmulatorBackend(emulator)] }] };
}

describeEachDatabase.skipIf(dockerMissing)('a task on the emulated AWS', (databaseUrl) => {
  let hosts: DockerEmulatedHosts;
  let tarball: ShimTarballServer;
  let emulator: AwsEmulator;
  let harness: HarnessServer;
  const temp = makeTempDir();

  beforeAll(async () => {
    hosts = new DockerEmulatedHosts({ emulator: EMULATOR_NAME });
    tarball = await serveShimTarball(hosts);
    emulator = await startAwsEmulator({ hosts, regions: ['us-east-1', 'us-west-2'] });
    harness = await startHarnessServer({
      dir: temp.dir,
      config: awsConfig(emulator),
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

  it('lands on the cheapest offer, streams the output, and leaves nothing after fleet delete', async () => {
    const configuration = gpuTask('aws-hello', ['echo hello from $(hostname)']);
    const [cheapest] = (await planJob(harness, configuration)).offers;
    await applyTask(harness, configuration);
    const finished = await harness.waitForRun('aws-hello', ['done', 'failed', 'terminated'], 180_000);
    expect(finished.status).toBe('done');
    const instance = provisionedInstance(finished);
    expect({ type: instance.type, region: instance.region }).toEqual({
      type: cheapest?.instance.name,
      region: cheapest?.region,
    });
    expect(await harness.logs('aws-hello')).toContain(`hello from ${instance.id}`);

    await deleteFleet(harness, 'aws-hello');
    await waitFor(
      'the instance to be terminated',
      () => {
        const state = emulator.state().instances.find((each) => each.id === instance.id)?.state;
        return state === 'terminated' ? true : null;
      },
      120_000,
    );
    expect(emulator.state().instances.filter((each) => each.state === 'running')).toEqual([]);
    expect(await hostsLeft(EMULATOR_NAME)).toEqual([]);
  }, 300_000);

  it('moves on to the next offer when the cheapest has no capacity', async () => {
    const configuration = gpuTask('aws-capacity', ['echo landed']);
    const [cheapest, next] = (await planJob(harness, configuration)).offers;
    if (!cheapest || !next) throw new Error('the plan has fewer than two offers');
    for (const zone of cheapest.availability_zones ?? []) {
      emulator.addFault({ code: 'InsufficientInstanceCapacity', instanceType: cheapest.instance.name, zone });
    }
    try {
      await applyTask(harness, configuration);
      const finished = await harness.waitForRun('aws-capacity', ['done', 'failed', 'terminated'], 180_000);
      expect(finished.status).toBe('done');
      const instance = provisionedInstance(finished);
      expect({ type: instance.type, region: instance.region }).toEqual({
        type: next.instance.name,
        region: next.region,
      });
    } finally {
      emulator.clearFaults();
    }
    await deleteFleet(harness, 'aws-capacity');
  }, 300_000);

  it('resubmits a spot job the cloud took back, under retry on interruption', async () => {
    await applyTask(
      harness,
      gpuTask('aws-spot', ['sleep 3', 'echo survived'], {
        spot_policy: 'spot',
        retry: { on_events: ['interruption'], duration: '1h' },
      }),
    );
    const running = await harness.waitForRun('aws-spot', ['running'], 180_000);
    const first = provisionedInstance(running);
    expect(emulator.state().instances.find((each) => each.id === first.id)?.market).toBe('spot');
    emulator.interruptSpotInstance(first.id);

    const finished = await harness.waitForRun('aws-spot', ['done', 'failed', 'terminated'], 240_000);
    expect(finished.status).toBe('done');
    const submissions = finished.jobs[0]?.job_submissions ?? [];
    expect(submissions.map((submission) => submission.termination_reason)).toEqual([
      'interrupted_by_no_capacity',
      'done_by_runner',
    ]);
    expect(provisionedInstance(finished).id).not.toBe(first.id);
    await deleteFleet(harness, 'aws-spot');
  }, 420_000);
});
