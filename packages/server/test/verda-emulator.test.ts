/**
 * A run on the emulated Verda (the backend's undici client, OAuth2 token included, against the
 * Verda emulator), end to end: the scenarios of `vm-cloud-runs.ts` every VM cloud passes, but spot
 * (the emulator does not take spot instances back yet), the private image (the host pulls it
 * whatever the cloud) and the failed runtime download (the same start script and log as AWS and
 * GCP, whose files run it), to keep the suite's time. The instance's startup script (core's
 * bootstrap script) starts the shim as root at first boot; the server logs in as root, as dstack.
 */
import { startVerdaEmulator, type VerdaEmulator, verdaEmulatorBackend } from '@dstack/testing/emulators';
import { describeVmCloudRuns } from './vm-cloud-runs.js';

describeVmCloudRuns({
  database: 'sqlite',
  cloud: 'verda',
  regions: [],
  gpu: 'L40S',
  skipScenarios: ['private-image', 'spot', 'no-agent'],
  async start(hosts) {
    const emulator: VerdaEmulator = await startVerdaEmulator({ hosts });
    const instances = () => emulator.state().instances;
    return {
      backend: verdaEmulatorBackend(emulator),
      failCapacity(offer) {
        emulator.addFault({ code: 'NO_CAPACITY', instanceType: offer.instance.name, location: offer.region });
      },
      refuseCredentials: () => emulator.addFault({ code: 'INVALID_CREDENTIALS' }),
      clearFaults: () => emulator.clearFaults(),
      interruptSpot: () => {
        throw new Error('the Verda emulator does not take spot instances back');
      },
      isSpot: (id) => instances().find((each) => each.id === id)?.isSpot === true,
      isGone: (id) =>
        !instances().some((each) => each.id === id && !['deleting', 'discontinued'].includes(each.status)),
      runningIds: () =>
        instances()
          .filter((each) => ['ordered', 'provisioning', 'running'].includes(each.status))
          .map((each) => each.id),
      state: () => emulator.state(),
      close: () => emulator.close(),
    };
  },
  launchFaults: ['refused-credentials'],
  hello: { command: 'echo hello from the emulated verda', expected: () => 'hello from the emulated verda' },
});
