/**
 * Clusters and volumes on the emulated GCP, end to end through the real server (SQLite: slow
 * scenarios, once): a `nodes: 2` task lands on a cluster fleet whose instances go into a compact
 * placement resource policy, its nodes get their ranks and the master's internal IP and reach
 * each other there, and the policy goes with the fleet; a task writes to a new persistent disk
 * (a real block device in the emulated host, formatted and mounted by the shim) and the next run,
 * on another instance, reads it back. After each scenario no disk is attached and no instance or
 * policy is left.
 */
import type { Run, Volume } from '@dstack/core';
import { DEFAULT_IMAGE_PYTHON } from '@dstack/core/agent-protocol';
import {
  type AgentRuntimeServer,
  type DefaultImageRegistry,
  DockerEmulatedHosts,
  type GcpEmulator,
  gcpEmulatorBackend,
  serveAgentRuntime,
  serveDefaultImages,
  startGcpEmulator,
} from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteFleet, gpuTask } from './cloud-run-helpers.js';
import { dockerMissing, hostsLeft } from './emulated-hosts-harness.js';
import { applyTask, type HarnessServer, makeTempDir, startHarnessServer, waitFor } from './server-harness.js';

const REGION = 'us-central1';
const emulatorName = `gcp-cluster-e2e-${process.pid}`;

function jobsOf(run: Run) {
  return run.jobs.map((job) => {
    const submission = job.job_submissions.at(-1);
    const data = submission?.job_provisioning_data;
    return {
      instance: data?.instance_id ?? '',
      zone: data?.availability_zone ?? '',
      internalIp: data?.internal_ip ?? '',
    };
  });
}

describe.skipIf(dockerMissing)('clusters and volumes on the emulated GCP', () => {
  let hosts: DockerEmulatedHosts;
  let tarball: AgentRuntimeServer;
  let defaultImages: DefaultImageRegistry;
  let emulator: GcpEmulator;
  let harness: HarnessServer;
  const temp = makeTempDir();

  /** Nothing of the scenario is left in the cloud: instances, policies, attachments. */
  async function expectNothingLeft() {
    await waitFor(
      'the instances to be gone',
      () => (emulator.state().instances.length === 0 ? true : null),
      120_000,
    );
    expect(emulator.state().resourcePolicies).toEqual([]);
    expect(emulator.state().disks.filter((disk) => disk.attachedTo !== null)).toEqual([]);
    expect(await hostsLeft(emulatorName)).toEqual([]);
  }

  beforeAll(async () => {
    hosts = new DockerEmulatedHosts({ emulator: emulatorName });
    tarball = await serveAgentRuntime(hosts);
    defaultImages = await serveDefaultImages(hosts, [DEFAULT_IMAGE_PYTHON]);
    emulator = await startGcpEmulator({ hosts, regions: [REGION] });
    harness = await startHarnessServer({
      dir: temp.dir,
      config: { projects: [{ name: 'main', backends: [gcpEmulatorBackend(emulator)] }] },
      env: { DSTACK_SHIM_DOWNLOAD_URL: tarball.url, DSTACK_BASE_IMAGE: defaultImages.baseImage },
    });
  }, 300_000);

  afterAll(async () => {
    await harness?.terminateFleetsAndClose();
    await emulator?.close();
    await hosts?.close();
    await tarball?.close();
    await defaultImages?.stop();
    temp.remove();
  }, 300_000);

  it("runs 2 nodes in one zone in the fleet's compact placement policy; the worker reaches the master's internal IP; the policy goes with the fleet", async () => {
    const runName = 'gcp-cluster';
    await applyTask(
      harness,
      gpuTask(
        runName,
        [
          'echo "node rank=$DSTACK_NODE_RANK nodes=$DSTACK_NODES_NUM master=$DSTACK_MASTER_NODE_IP ips=$(echo $DSTACK_NODES_IPS)"',
          // The master prints what the worker sends; the worker retries until the master listens.
          'if [ "$DSTACK_NODE_RANK" = 0 ]; then echo "master got: $(nc -l -p 7777 </dev/null)"; else until echo "hello from rank $DSTACK_NODE_RANK" | nc -w 2 "$DSTACK_MASTER_NODE_IP" 7777; do sleep 1; done; fi',
        ],
        { nodes: 2 },
      ),
    );
    const run = await harness.waitForRun(runName, ['done', 'failed', 'terminated'], 240_000);
    const logs = await harness.logs(runName);
    expect(run.status, logs).toBe('done');
    const [master, worker] = jobsOf(run);
    if (!master || !worker) throw new Error('the run has fewer than 2 jobs');
    expect(master.zone).toBe(worker.zone);
    expect(master.instance).not.toBe(worker.instance);
    expect(logs).toContain(
      `node rank=0 nodes=2 master=${master.internalIp} ips=${master.internalIp} ${worker.internalIp}`,
    );
    expect(logs).toContain(`node rank=1 nodes=2 master=${master.internalIp}`);
    expect(logs).toContain('master got: hello from rank 1');

    const [policy, ...others] = emulator.state().resourcePolicies;
    expect(others).toEqual([]);
    expect(policy).toMatchObject({ region: REGION, collocation: 'COLLOCATED' });
    expect(policy?.name).toMatch(new RegExp(`^dstack-main-${runName}-pg-[a-z0-9]{8}$`));
    expect([...(policy?.instances ?? [])].sort()).toEqual([master.instance, worker.instance].sort());

    await deleteFleet(harness, runName);
    await waitFor(
      'the policy to be gone',
      () => (emulator.state().resourcePolicies.length === 0 ? true : null),
      120_000,
    );
    await expectNothingLeft();
  }, 420_000);

  it('a task writes to a new persistent disk and the next run, on another instance, reads it back', async () => {
    const created = await harness.call<Volume>('/api/project/main/volumes/create', {
      configuration: { type: 'volume', name: 'gcp-data', backend: 'gcp', region: REGION, size: '10GB' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const volume = await waitFor('the volume to be active', async () => {
      const current = (await harness.call<Volume>('/api/project/main/volumes/get', { name: 'gcp-data' }))
        .body;
      if (current.status === 'failed') throw new Error(`the volume failed: ${current.status_message}`);
      return current.status === 'active' ? current : null;
    });
    const zone = volume.provisioning_data?.availability_zone;
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
      await applyTask(harness, gpuTask(runName, [command], { volumes: ['gcp-data:/data'] }));
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
    const [first] = jobsOf(writer.run);
    expect(first?.zone).toBe(zone);
    // The instance goes, so the next run lands on another one.
    await deleteFleet(harness, 'gcp-volume-writer');
    await waitFor('the disk to be detached', () =>
      emulator.state().disks.every((disk) => disk.attachedTo === null) ? true : null,
    );

    const reader = await finished('gcp-volume-reader', 'cat /data/greeting.txt');
    expect(reader.logs).toContain('written-on-the-disk');
    const [second] = jobsOf(reader.run);
    expect(second?.instance).not.toBe(first?.instance);
    await deleteFleet(harness, 'gcp-volume-reader');

    const deleted = await harness.call('/api/project/main/volumes/delete', { names: ['gcp-data'] });
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    await waitFor(
      'the disk to be deleted',
      () => (emulator.state().disks.length === 0 ? true : null),
      120_000,
    );
    await expectNothingLeft();
  }, 420_000);
});
