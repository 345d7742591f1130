/**
 * A run on the emulated Lambda Cloud (the backend's undici client against the Lambda emulator),
 * end to end: the scenarios of `vm-cloud-runs.ts` every VM cloud passes, but spot (Lambda has
 * none), the private image (the host pulls it whatever the cloud) and the failed runtime download
 * (a minute of the bootstrap's retries; the same start script and log as AWS and GCP, whose files
 * run it), to keep the suite's time. Lambda runs no user data: the emulated host has only the
 * launch's key authorized, and the backend logs in as `ubuntu` to start the shim, as dstack does.
 */
import { type LambdaEmulator, lambdaEmulatorBackend, startLambdaEmulator } from '@dstack/testing/emulators';
import { describeVmCloudRuns } from './vm-cloud-runs.js';

describeVmCloudRuns({
  database: 'sqlite',
  cloud: 'lambda',
  regions: [],
  // Lambda has no T4; its cheapest A10 type is in every region.
  gpu: 'A10',
  skipScenarios: ['private-image', 'spot', 'no-agent'],
  async start(hosts) {
    const emulator: LambdaEmulator = await startLambdaEmulator({ hosts });
    const instances = () => emulator.state().instances;
    return {
      backend: lambdaEmulatorBackend(emulator),
      failCapacity(offer) {
        emulator.addFault({
          code: 'INSUFFICIENT_CAPACITY',
          instanceType: offer.instance.name,
          region: offer.region,
        });
      },
      refuseCredentials: () => emulator.addFault({ code: 'INVALID_API_KEY' }),
      clearFaults: () => emulator.clearFaults(),
      interruptSpot: () => {
        throw new Error('Lambda has no spot instances');
      },
      isSpot: () => false,
      isGone: (id) => !instances().some((each) => each.id === id && each.status !== 'terminating'),
      runningIds: () =>
        instances()
          .filter((each) => each.status === 'active' || each.status === 'booting')
          .map((each) => each.id),
      state: () => emulator.state(),
      close: () => emulator.close(),
    };
  },
  // The backend does not retry Lambda's 429 itself (as dstack): the server's few retries cannot
  // outlast the scenario's throttling; lambda-compute.test.ts checks the 429 is BackendRateLimitError.
  launchFaults: ['refused-credentials'],
  hello: { command: 'echo hello from the emulated lambda', expected: () => 'hello from the emulated lambda' },
});
