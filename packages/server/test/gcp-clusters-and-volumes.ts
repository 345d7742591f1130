/**
 * Clusters and volumes on the emulated GCP, end to end, on the server, Compute Engine emulator and
 * hosts of `gcp-emulator.test.ts`: a `nodes: 2` task lands on a cluster fleet
 * whose instances go into a compact placement resource policy, its nodes get their ranks and the
 * master's internal IP and reach each other there, a killed node ends the other and `retry`
 * resubmits both, and the policy goes with the fleet; a persistent disk in a zone restricts the
 * offers to that zone, a task writes to it (a real block device in the emulated host, formatted
 * and mounted by the shim) and the next run, on another instance, reads it back. After each
 * scenario the cloud is empty (`expectCloudEmpty`, in `vm-cloud-runs.ts`).
 */
import type { Volume } from '@dstack/core';
import type { DockerEmulatedHosts, GcpEmulator } from '@dstack/testing/emulators';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  clusterNodes,
  deleteFleet,
  gpuTask,
  planJob,
  runKilledAndRetriedCluster,
} from './cloud-run-helpers.js';
import { applyTask, type HarnessServer, waitFor } from './server-harness.js';
import type { VmCloudContext } from './vm-cloud-runs.js';

const REGION = 'us-central1';

export function describeGcpClustersAndVolumes(context: VmCloudContext, gcp: () => GcpEmulator): void {
  describe('clusters and persistent disks', () => {
    let harness: HarnessServer;
    let hosts: DockerEmulatedHosts;
    let emulator: GcpEmulator;

    beforeAll(() => {
      harness = context.harness();
      hosts = context.hosts();
      emulator = gcp();
    });

    it("runs 2 nodes in one zone in the fleet's compact placement policy: ranks, the master's IP, TCP to it; a killed node ends the other and retry resubmits both; the policy goes with the fleet", async () => {
      const runName = 'gcp-cluster';
      const [master, worker, ...others] = await runKilledAndRetriedCluster(
        harness,
        (name, script) => hosts.exec(emulator.hostIdOf(name), script),
        runName,
        2,
        context.smallImage(),
        { regions: [REGION] },
      );
      expect(others).toEqual([]);
      expect(master?.zone).toBe(worker?.zone);

      const [policy, ...otherPolicies] = emulator.state().resourcePolicies;
      expect(otherPolicies).toEqual([]);
      expect(policy).toMatchObject({ region: REGION, collocation: 'COLLOCATED' });
      expect(policy?.name).toMatch(new RegExp(`^dstack-main-${runName}-pg-[a-z0-9]{8}$`));
      expect([...(policy?.instances ?? [])].sort()).toEqual([master?.instance, worker?.instance].sort());

      await deleteFleet(harness, runName);
      expect(emulator.state().resourcePolicies).toEqual([]);
    }, 420_000);

    it('a task writes to a new persistent disk and the next run, on another instance, reads it back; the disk zone restricts the offers', async () => {
      // A zone other than the one a run without the disk would take first.
      const [cheapest] = (await planJob(harness, gpuTask('gcp-zones', ['true'], { regions: [REGION] })))
        .offers;
      const diskZone = cheapest?.availability_zones?.at(-1);
      if (!diskZone || cheapest?.availability_zones?.length === 1) {
        throw new Error(`the cheapest offer has not several zones: ${JSON.stringify(cheapest)}`);
      }
      const created = await harness.call<Volume>('/api/project/main/volumes/create', {
        configuration: {
          type: 'volume',
          name: 'gcp-data',
          backend: 'gcp',
          region: REGION,
          availability_zone: diskZone,
          size: '10GB',
        },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const volume = await waitFor('the volume to be active', async () => {
        const current = (await harness.call<Volume>('/api/project/main/volumes/get', { name: 'gcp-data' }))
          .body;
        if (current.status === 'failed') throw new Error(`the volume failed: ${current.status_message}`);
        return current.status === 'active' ? current : null;
      });
      const zone = volume.provisioning_data?.availability_zone;
      expect(zone).toBe(diskZone);
      const plan = await planJob(harness, gpuTask('gcp-zoned', ['true'], { volumes: ['gcp-data:/data'] }));
      expect(plan.offers.length).toBeGreaterThan(0);
      for (const offer of plan.offers) expect(offer.availability_zones).toEqual([diskZone]);
      expect(emulator.state().disks).toEqual([
        expect.objectContaining({
          name: volume.volume_id,
          zone,
          sizeGb: 10,
          type: 'pd-balanced',
          attachedTo: null,
        }),
      ]);

      const finished = async (runName: string, command: string) => {
        await applyTask(
          harness,
          gpuTask(runName, [command], { image: context.smallImage(), volumes: ['gcp-data:/data'] }),
        );
        const run = await harness.waitForRun(runName, ['done', 'failed', 'terminated'], 240_000);
        const logs = await harness.logs(runName);
        expect(run.status, `${run.latest_job_submission?.termination_reason_message ?? ''}\n${logs}`).toBe(
          'done',
        );
        return { run, logs };
      };
      const writer = await finished(
        'gcp-volume-writer',
        'echo written-on-the-disk > /data/greeting.txt && echo wrote',
      );
      const [first] = clusterNodes(writer.run);
      expect(first?.zone).toBe(zone);
      // The instance goes, so the next run lands on another one.
      await deleteFleet(harness, 'gcp-volume-writer');
      await waitFor('the disk to be detached', () =>
        emulator.state().disks.every((disk) => disk.attachedTo === null) ? true : null,
      );

      const reader = await finished('gcp-volume-reader', 'cat /data/greeting.txt');
      expect(reader.logs).toContain('written-on-the-disk');
      const [second] = clusterNodes(reader.run);
      expect(second?.instance).not.toBe(first?.instance);
      await deleteFleet(harness, 'gcp-volume-reader');

      const deleted = await harness.call('/api/project/main/volumes/delete', { names: ['gcp-data'] });
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
      await waitFor(
        'the disk to be deleted',
        () => (emulator.state().disks.length === 0 ? true : null),
        120_000,
      );
    }, 420_000);
  });
}
