/**
 * A run on the emulated AWS (the real AWS SDK against the EC2 emulator), end to end: the
 * scenarios of `vm-cloud-runs.ts`, the clusters and EBS volumes of `aws-clusters-volumes.ts`,
 * dstack's own volume examples of `aws-volume-examples.ts` (in eu-central-1, the region they
 * name) and dstack's torchrun example across two nodes (`torchrun-cluster.ts`) on the same
 * server and emulator.
 */
import { type AwsEmulator, awsEmulatorBackend, startAwsEmulator } from '@dstack/testing/emulators';
import { describeAwsClustersAndVolumes, rootWithLoopDevices } from './aws-clusters-volumes.js';
import { describeAwsVolumeExamples, EXAMPLES_REGION } from './aws-volume-examples.js';
import { describeTorchrunAcrossNodes } from './torchrun-cluster.js';
import { describeVmCloudRuns } from './vm-cloud-runs.js';

let aws: AwsEmulator;

describeVmCloudRuns({
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
  more: (context) => {
    describeAwsClustersAndVolumes(context, () => aws);
    describeAwsVolumeExamples(context, () => aws);
    describeTorchrunAcrossNodes(context, 'aws');
  },
});
