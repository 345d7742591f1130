/**
 * Clusters and EBS volumes on the emulated AWS, end to end, on the server, EC2 emulator and hosts
 * of `aws-emulator.test.ts`: emulated hosts (Docker containers with their own
 * Docker daemon) whose attached volumes are real block devices (a loop device each, made in the
 * host with mknod and found by the shim by the volume id; root only).
 */
import type { Volume } from '@dstack/core';
import type { AwsEmulator, DockerEmulatedHosts } from '@dstack/testing/emulators';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  deleteFleet,
  gpuTask,
  planJob,
  provisionedInstance,
  runKilledAndRetriedCluster,
} from './cloud-run-helpers.js';
import { applyTask, type HarnessServer, waitFor } from './server-harness.js';
import type { VmCloudContext } from './vm-cloud-runs.js';

/** Loop devices (attached volumes as real block devices) need root. */
export const rootWithLoopDevices = process.getuid?.() === 0;
/** Nodes of the cluster scenario: each is a host with its own Docker daemon. */
const CLUSTER_NODES = 4;

export function describeAwsClustersAndVolumes(context: VmCloudContext, emulator: () => AwsEmulator): void {
  describe.skipIf(!rootWithLoopDevices)('clusters and EBS volumes', () => {
    let harness: HarnessServer;
    let hosts: DockerEmulatedHosts;
    let aws: AwsEmulator;
    /** What the tasks run in: the volumes and the cluster are tested here, not dstack's base image. */
    let smallImage: string;

    beforeAll(() => {
      harness = context.harness();
      hosts = context.hosts();
      aws = emulator();
      smallImage = context.smallImage();
    });

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
        smallImage,
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
          image: smallImage,
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

      await applyTask(harness, gpuTask('ebs-reader', ['cat /data/kept.txt'], { image: smallImage, volumes }));
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
}
