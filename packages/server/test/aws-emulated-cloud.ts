/**
 * The emulated AWS the AWS end-to-end files share (each file starts its own, with its server and
 * hosts): the EC2 emulator in the regions the scenarios use, on Postgres (the one cloud end to end
 * that proves a real run on Postgres), its faults and spot interruptions as `vm-cloud-runs.ts`
 * injects them. `aws()` is the file's emulator once its `beforeAll` has run.
 */
import { type AwsEmulator, awsEmulatorBackend, startAwsEmulator } from '@dstack/testing/emulators';
import { rootWithLoopDevices } from './aws-clusters-volumes.js';
import { EXAMPLES_REGION } from './aws-volume-examples.js';
import type { VmCloudScenarios } from './vm-cloud-runs.js';

export function emulatedAws(): {
  scenarios: Omit<VmCloudScenarios, 'more' | 'commonScenarios'>;
  aws(): AwsEmulator;
} {
  let aws: AwsEmulator | undefined;
  return {
    aws() {
      if (aws === undefined) throw new Error('the AWS emulator is not started yet');
      return aws;
    },
    scenarios: {
      database: 'postgres',
      cloud: 'aws',
      regions: ['us-east-1', 'us-west-2', EXAMPLES_REGION],
      async start(hosts, regions) {
        const emulator = await startAwsEmulator({ hosts, regions, blockDevices: rootWithLoopDevices });
        aws = emulator;
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
    },
  };
}
