/**
 * A run on the emulated Nebius (the backend's grpc-js client, service-account JWT and IAM token
 * included, against the Nebius gRPC emulator), end to end: the scenarios of `vm-cloud-runs.ts`
 * every VM cloud passes, but the private image and the failed runtime download (the same cloud-init
 * user data and log as AWS, whose file runs them), to keep the suite's time. The instance's
 * cloud-init user data runs dstack's Nebius setup commands (sshd and Docker restarted by their
 * services) and starts the shim; the server logs in as ubuntu, as dstack. Spot runs on H100 (the
 * catalog has no preemptible L40S); the emulator preempts as Nebius does, stopping the instance.
 * Deleting the fleet deletes the instance, then its boot disk.
 */
import { type NebiusEmulator, nebiusEmulatorBackend, startNebiusEmulator } from '@dstack/testing/emulators';
import { describeVmCloudRuns } from './vm-cloud-runs.js';

describeVmCloudRuns({
  database: 'sqlite',
  cloud: 'nebius',
  regions: [],
  gpu: 'L40S',
  spotGpu: 'H100',
  skipScenarios: ['private-image', 'no-agent'],
  async start(hosts) {
    const emulator: NebiusEmulator = await startNebiusEmulator({ hosts });
    const instances = () => emulator.state().instances;
    return {
      backend: nebiusEmulatorBackend(emulator),
      failCapacity(offer) {
        emulator.addFault({
          code: 'NO_CAPACITY',
          platform: offer.instance.name.split(' ')[0],
          region: offer.region,
        });
      },
      refuseCredentials: () => emulator.addFault({ code: 'INVALID_CREDENTIALS' }),
      clearFaults: () => emulator.clearFaults(),
      interruptSpot: (id) => emulator.preemptInstance(id),
      isSpot: (id) => instances().find((each) => each.id === id)?.preemptible === true,
      isGone: (id) => !instances().some((each) => each.id === id && each.state !== 'DELETING'),
      runningIds: () =>
        instances()
          .filter((each) => each.state !== 'DELETING')
          .map((each) => each.id),
      state: () => emulator.state(),
      close: () => emulator.close(),
    };
  },
  launchFaults: ['refused-credentials'],
  hello: { command: 'echo hello from the emulated nebius', expected: () => 'hello from the emulated nebius' },
});
