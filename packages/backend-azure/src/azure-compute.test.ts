import { NoCapacityError } from '@dstack/core';
import {
  anyCpuOfferRequirements,
  conformanceInstanceConfiguration,
  generateProjectSshKeys,
} from '@dstack/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AzureCompute, createAzureBackend } from './azure-compute.js';
import { azureConfigModels } from './azure-config.js';
import { AzureConfigurator } from './azure-configurator.js';
import {
  type AzureTestEmulator,
  emulatorCatalog,
  emulatorConfig,
  startAzureTestEmulator,
} from './azure-emulator.test.helpers.js';

// Azure's capacity errors as each arrives (the PUT's 409, the operation's failure), against the
// emulator: every one is NoCapacityError, and the failed launch leaves nothing in the subscription.
describe('azure launches Azure refuses', () => {
  let emulator: AzureTestEmulator;
  let compute: AzureCompute;
  beforeAll(async () => {
    emulator = await startAzureTestEmulator();
    const record = await new AzureConfigurator().createBackend(
      'main',
      emulatorConfig(emulator.azure, { regions: ['eastus'] }),
    );
    compute = createAzureBackend({
      config: azureConfigModels.configFromRecord(record),
      catalog: emulatorCatalog(emulator.azure),
      pollIntervalMs: 20,
    });
  });
  afterAll(() => emulator?.close());

  it.each([
    ['SkuNotAvailable', 'SkuNotAvailable'],
    ['QuotaExceeded', 'OperationNotAllowed'],
    ['AllocationFailed', 'AllocationFailed'],
  ] as const)('%s is NoCapacityError (%s) and leaves no VM, disk, NIC or public IP', async (fault, code) => {
    const [offer] = await compute.getOffers(anyCpuOfferRequirements());
    if (!offer) throw new Error('no offer');
    emulator.azure.addFault({ code: fault, vmSize: offer.instance.name, count: 1 });
    const keys = generateProjectSshKeys();
    const config = conformanceInstanceConfiguration({
      instanceId: `instance-${fault}`,
      agentToken: 'token',
      instanceName: `refused-${fault.toLowerCase()}`,
      projectName: 'main',
      keys,
    });

    const failure = await compute.createInstance(offer, config, null).catch((error: unknown) => error);

    expect(NoCapacityError.isInstance(failure)).toBe(true);
    expect(String((failure as Error).message)).toContain(code);
    const { virtualMachines, disks, networkInterfaces, publicIpAddresses } = emulator.azure.state();
    expect({ virtualMachines, disks, networkInterfaces, publicIpAddresses }).toEqual({
      virtualMachines: [],
      disks: [],
      networkInterfaces: [],
      publicIpAddresses: [],
    });
  });
});
