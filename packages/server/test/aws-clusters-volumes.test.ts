/**
 * Clusters and EBS volumes on the emulated AWS, end to end: a real server, the real AWS SDK
 * against the EC2 emulator, emulated hosts (Docker containers with their own Docker daemon) whose
 * attached volumes are real block devices (a loop device each, made in the host with mknod and
 * found by the shim by the volume id). Once, on SQLite: what is tested is the cloud and the
 * hosts, not the database, and each scenario boots real hosts.
 */
import type { Volume } from '@dstack/core';
import { DEFAULT_IMAGE_PYTHON } from '@dstack/core/agent-protocol';
import {
  type AgentRuntimeServer,
  type AwsEmulator,
  awsEmulatorBackend,
  type DefaultImageRegistry,
  DockerEmulatedHosts,
  serveAgentRuntime,
  serveDefaultImages,
  startAwsEmulator,
} from '@dstack/testing/emulators';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  deleteFleet,
  expectCloudEmpty,
  gpuTask,
  planJob,
  provisionedInstance,
  runKilledAndRetriedCluster,
} from './cloud-run-helpers.js';
import { dockerMissing } from './emulated-hosts-harness.js';
import { applyTask, type HarnessServer, makeTempDir, startHarnessServer, waitFor } from './server-harness.js';

const rootWithLoopDevices = process.getuid?.() === 0;
const emulatorName = `aws-cv-${process.pid}`;
/** Nodes of the cluster scenario: each is a host with its own Docker daemon. */
const CLUSTER_NODES = 4;

describe.skipIf(dockerMissing || !rootWithLoopDevices)('clusters and EBS volumes on the emulated AWS', () => {
  let hosts: DockerEmulatedHosts;
  let tarball: AgentRuntimeServer;
  let defaultImages: DefaultImageRegistry;
  let aws: AwsEmulator;
  let harness: HarnessServer;
  const temp = makeTempDir();

  beforeAll(async () => {
    hosts = new DockerEmulatedHosts({ emulator: emulatorName });
    tarball = await serveAgentRuntime(hosts);
    defaultImages = await serveDefaultImages(hosts, [DEFAULT_IMAGE_PYTHON]);
    aws = await startAwsEmulator({ hosts, regions: ['us-east-1'], blockDevices: true });
    harness = await startHarnessServer({
      dir: temp.dir,
      config: { projects: [{ name: 'main', backends: [awsEmulatorBackend(aws)] }] },
      env: { DSTACK_SHIM_DOWNLOAD_URL: tarball.url, DSTACK_BASE_IMAGE: defaultImages.baseImage },
    });
  }, 300_000);

  // Nothing left in the cloud after a test: no attached volume, live instance, group or host.
  afterEach(() => expectCloudEmpty(aws, { hostsOf: emulatorName }), 150_000);

  afterAll(async () => {
    await harness?.terminateFleetsAndClose();
    await aws?.close();
    await hosts?.close();
    await tarball?.close();
    await defaultImages?.stop();
    temp.remove();
  }, 300_000);

  it(`runs ${CLUSTER_NODES} nodes on a cluster fleet in one placement group: ranks, the master's IP, TCP to it; a killed node ends the others and retry resubmits all; availability_zones honoured; the group goes with the fleet`, async () => {
    const runName = 'aws-cluster';
    // availability_zones: a zone other than the one the cheapest offer would take first.
    const [cheapest] = (await planJob(harness, gpuTask('aws-zones', ['true']))).offers;
    const zone = cheapest?.availability_zones?.at(-1);
    if (!zone || cheapest?.availability_zones?.length === 1) {
      throw new Error(`the cheapest offer has not several zones: ${JSON.stringify(cheapest)}`);
    }
    const zoned = await planJob(harness, gpuTask('aws-zoned', ['true'], { availability_zones: [zone] }));
    expect(zoned.offers.length).toBeGreaterThan(0);
    for (const offer of zoned.offers) expect(offer.availability_zones).toEqual([zone]);

    const nodes = await runKilledAndRetriedCluster(
      harness,
      (id, script) => hosts.exec(id, script),
      runName,
      CLUSTER_NODES,
      { availability_zones: [zone] },
    );
    expect(nodes.map((node) => node.zone)).toEqual(Array(CLUSTER_NODES).fill(zone));
    const [group, ...others] = aws.state().placementGroups;
    expect(others).toEqual([]);
    expect(group).toMatchObject({ strategy: 'cluster' });
    expect(group?.name).toMatch(new RegExp(`^dstack-main-${runName}-pg-[a-z0-9]{8}$`));
    // The resubmitted nodes reused the fleet's instances, all in the group.
    expect([...(group?.instances ?? [])].sort()).toEqual(nodes.map((node) => node.instance).sort());
    await deleteFleet(harness, runName);
    expect(aws.state().placementGroups).toEqual([]);
  }, 600_000);

  async function createVolume(name: string, zone: string): Promise<Volume> {
    const created = await harness.call<Volume>('/api/project/main/volumes/create', {
      configuration: {
        type: 'volume',
        name,
        backend: 'aws',
        region: 'us-east-1',
        availability_zone: zone,
        size: 1,
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    return waitFor(`volume ${name} to be active`, async () => {
      const volume = (await harness.call<Volume>('/api/project/main/volumes/get', { name })).body;
      return volume.status === 'active' ? volume : null;
    });
  }

  it('keeps a file on an EBS volume from one run to the next on another instance, in the volume zone only', async () => {
    const volume = await createVolume('ebs-data', 'us-east-1b');
    const volumes = ['ebs-data:/data'];
    const plan = await planJob(harness, gpuTask('ebs-plan', ['true'], { volumes }));
    expect(plan.offers.length).toBeGreaterThan(0);
    for (const offer of plan.offers) expect(offer.availability_zones).toEqual(['us-east-1b']);

    await applyTask(
      harness,
      // It holds the volume until the test stops it.
      gpuTask('ebs-writer', ['echo kept-on-ebs > /data/kept.txt', 'df -T /data', 'exec sleep 600'], {
        volumes,
      }),
    );
    const writing = await harness.waitForRun('ebs-writer', ['running'], 300_000);
    await waitFor('the volume to be attached', () =>
      aws.state().volumes.some((each) => each.attachment?.status === 'attached') ? true : null,
    );
    const refused = await harness.call<{ detail?: unknown }>('/api/project/main/volumes/delete', {
      names: ['ebs-data'],
    });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('ebs-writer');
    // Written (df runs after the echo) before it is stopped.
    await waitFor('the file system in the logs', async () =>
      (await harness.logs('ebs-writer')).includes('ext4') ? true : null,
    );
    const stopped = await harness.call('/api/project/main/runs/stop', {
      runs_names: ['ebs-writer'],
      abort: false,
    });
    expect(stopped.status).toBe(200);
    const written = await harness.waitForRun('ebs-writer', ['done', 'failed', 'terminated'], 120_000);
    expect(written.latest_job_submission?.termination_reason).toBe('terminated_by_user');
    expect(await harness.logs('ebs-writer')).toContain('ext4');
    const first = provisionedInstance(writing);
    expect(first.zone).toBe('us-east-1b');
    await deleteFleet(harness, 'ebs-writer');

    await applyTask(harness, gpuTask('ebs-reader', ['cat /data/kept.txt'], { volumes }));
    const read = await harness.waitForRun('ebs-reader', ['done', 'failed', 'terminated'], 300_000);
    expect(read.status, read.latest_job_submission?.termination_reason_message ?? '').toBe('done');
    expect(provisionedInstance(read).id).not.toBe(first.id);
    expect(await harness.logs('ebs-reader')).toContain('kept-on-ebs');
    await deleteFleet(harness, 'ebs-reader');

    await waitFor('the volume to be detached', () =>
      aws.state().volumes.every((each) => each.attachment === null) ? true : null,
    );
    const deleted = await harness.call('/api/project/main/volumes/delete', { names: ['ebs-data'] });
    expect(deleted.status).toBe(200);
    await waitFor('the EBS volume to be deleted', () =>
      aws.state().volumes.some((each) => each.id === volume.provisioning_data?.volume_id) ? null : true,
    );
  }, 600_000);
});
