/**
 * A run on the emulated GCP (google-auth-library's token exchange and Compute REST against the
 * Compute Engine emulator), end to end: the scenarios of `vm-cloud-runs.ts`, and the
 * clusters and persistent disks of `gcp-clusters-and-volumes.ts` on the same server and emulator.
 * GCP's capacity error arrives late, through the insert's operation; the run still lands on the
 * cheapest zone.
 */
import { type GcpEmulator, gcpEmulatorBackend, startGcpEmulator } from '@dstack/testing/emulators';
import { expect } from 'vitest';
import { describeGcpClustersAndVolumes } from './gcp-clusters-and-volumes.js';
import { describeVmCloudRuns } from './vm-cloud-runs.js';

let gcp: GcpEmulator;

describeVmCloudRuns({
  database: 'sqlite',
  cloud: 'gcp',
  regions: ['us-central1', 'europe-west4'],
  async start(hosts, regions) {
    const emulator = await startGcpEmulator({ hosts, regions });
    gcp = emulator;
    const instances = () => emulator.state().instances;
    return {
      backend: gcpEmulatorBackend(emulator),
      failCapacity(offer) {
        // The insert answers a RUNNING operation that fails later.
        for (const zone of offer.availability_zones ?? []) {
          emulator.addFault({
            code: 'ZONE_RESOURCE_POOL_EXHAUSTED',
            machineType: offer.instance.name,
            provisioningModel: 'STANDARD',
            zone,
            delayMs: 1500,
          });
        }
      },
      refuseCredentials: () => emulator.addFault({ code: 'INVALID_GRANT' }),
      clearFaults: () => emulator.clearFaults(),
      interruptSpot: (id) => emulator.preemptInstance(id),
      isSpot: (id) => instances().find((each) => each.id === id)?.market === 'SPOT',
      isGone: (id) => !instances().some((each) => each.id === id),
      runningIds: () =>
        instances()
          .filter((each) => each.state === 'RUNNING')
          .map((each) => each.id),
      state: () => emulator.state(),
      close: () => emulator.close(),
    };
  },
  // Its throttling is retried with Google's backoff (seconds, doubling): too slow to wait out here.
  launchFaults: ['refused-credentials'],
  hello: { command: 'echo hello from the emulated gce', expected: () => 'hello from the emulated gce' },
  expectLandedOn(instance, offer) {
    expect(instance.zone).toBe(offer.availability_zones?.[0]);
  },
  more: (context) => describeGcpClustersAndVolumes(context, () => gcp),
});
