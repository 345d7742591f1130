/**
 * A run on the emulated AWS (the real AWS SDK against the EC2 emulator), end to end: the
 * scenarios of `vm-cloud-runs.ts`.
 */
import { awsEmulatorBackend, startAwsEmulator } from '@dstack/testing/emulators';
import { describeVmCloudRuns } from './vm-cloud-runs.js';

describeVmCloudRuns({
  cloud: 'aws',
  regions: ['us-east-1', 'us-west-2'],
  async start(hosts, regions) {
    const emulator = await startAwsEmulator({ hosts, regions });
    const instance = (id: string) => emulator.state().instances.find((each) => each.id === id);
    return {
      backend: awsEmulatorBackend(emulator),
      failCapacity(offer) {
        for (const zone of offer.availability_zones ?? []) {
          emulator.addFault({
            code: 'InsufficientInstanceCapacity',
            instanceType: offer.instance.name,
            zone,
          });
        }
      },
      refuseCredentials: () => emulator.addFault({ code: 'AuthFailure' }),
      throttleLaunches: (count) =>
        emulator.addFault({ code: 'RequestLimitExceeded', action: 'RunInstances', count }),
      clearFaults: () => emulator.clearFaults(),
      interruptSpot: (id) => emulator.interruptSpotInstance(id),
      isSpot: (id) => instance(id)?.market === 'spot',
      isGone: (id) => instance(id)?.state === 'terminated',
      runningIds: () =>
        emulator
          .state()
          .instances.filter((each) => each.state === 'running')
          .map((each) => each.id),
      state: () => emulator.state(),
      close: () => emulator.close(),
    };
  },
  launchFaults: ['refused-credentials', 'throttling'],
  // The emulated host's hostname is the instance id.
  hello: { command: 'echo hello from $(hostname)', expected: (instance) => `hello from ${instance.id}` },
});
