/**
 * A run on the emulated Azure (@azure/identity's token request to the emulated Entra ID, the
 * @azure/arm-* clients against the emulated Resource Manager over TLS), end to end: the
 * scenarios of `vm-cloud-runs.ts`. The server plans from the emulator's own catalog (its sizes and
 * prices published in gpuhunt's layout); Azure's capacity error arrives in the create's
 * long-running operation, and a deleted fleet must leave no VM, disk, NIC or public IP.
 */
import {
  type AzureEmulatorWithCatalog,
  azureEmulatorBackend,
  startAzureEmulatorWithCatalog,
} from '@dstack/testing/emulators';
import { describeVmCloudRuns } from './vm-cloud-runs.js';

describeVmCloudRuns({
  database: 'sqlite',
  cloud: 'azure',
  regions: ['eastus', 'eastus2', 'westeurope'],
  async start(hosts) {
    const emulator: AzureEmulatorWithCatalog = await startAzureEmulatorWithCatalog({ hosts });
    const vms = () => emulator.state().virtualMachines;
    return {
      backend: azureEmulatorBackend(emulator),
      catalogUrl: emulator.catalog.url,
      failCapacity(offer) {
        emulator.addFault({
          code: 'AllocationFailed',
          vmSize: offer.instance.name,
          location: offer.region,
          priority: offer.instance.resources.spot ? 'Spot' : 'Regular',
        });
      },
      refuseCredentials: () => emulator.addFault({ code: 'InvalidClientSecret' }),
      clearFaults: () => emulator.clearFaults(),
      interruptSpot: (id) => emulator.evictSpotVm(id),
      isSpot: (id) => vms().find((each) => each.name === id)?.priority === 'Spot',
      isGone: (id) => !vms().some((each) => each.name === id),
      runningIds: () =>
        vms()
          .filter((each) => each.state === 'Succeeded')
          .map((each) => each.name),
      state: () => emulator.state(),
      close: () => emulator.close(),
    };
  },
  launchFaults: ['refused-credentials'],
  // Its VMs boot as AWS's and GCP's instances do (the same bootstrap on the same hosts): the
  // private-image and runtime-download scenarios are theirs to run.
  skipScenarios: ['private-image', 'no-agent'],
  hello: { command: 'echo hello from the emulated azure', expected: () => 'hello from the emulated azure' },
});
