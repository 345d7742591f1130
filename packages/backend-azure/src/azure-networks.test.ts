/**
 * dstack's network and identity fields against the emulated Resource Manager: VMs in the user's
 * network (`vpc_ids`) or subnet (`subnet_ids`), without public IPs only where a NAT gateway gives
 * the subnet a way out, a user-assigned managed identity on the VM, and the VMs of one region in
 * one subnet (multinode). Every refusal names the field. No hosts: VMs get made-up addresses.
 */
import type { Catalog } from '@dstack/catalog';
import { ServerClientError } from '@dstack/core';
import {
  anyCpuOfferRequirements,
  conformanceInstanceConfiguration,
  generateProjectSshKeys,
} from '@dstack/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AzureClients } from './azure-clients.js';
import { createAzureBackend } from './azure-compute.js';
import { type AzureBackendConfigWithCreds, azureConfigModels } from './azure-config.js';
import { AzureConfigurator, parseAzureBackendConfig } from './azure-configurator.js';
import {
  type AzureTestEmulator,
  emulatorCatalog,
  emulatorConfig,
  startAzureTestEmulator,
} from './azure-emulator.test.helpers.js';
import { nameFromId } from './azure-names.js';

const validateOptions = {
  origin: 'server_config',
  defaultCredsEnabled: true,
  customEndpointsAllowed: true,
} as const;

// Each backend made here waits for Resource Manager's network operations: room for a loaded machine.
describe('azure networks and identities', { timeout: 60_000 }, () => {
  let emulator: AzureTestEmulator;
  let clients: AzureClients;
  let catalog: Catalog;
  const configurator = new AzureConfigurator();
  const keys = generateProjectSshKeys();

  /** The config of project `main` in eastus, with `extra`. */
  const config = (extra: Partial<AzureBackendConfigWithCreds>) =>
    emulatorConfig(emulator.azure, { regions: ['eastus'], ...extra });

  beforeAll(async () => {
    emulator = await startAzureTestEmulator();
    clients = new AzureClients(emulatorConfig(emulator.azure) as never);
    // The user's networks, in their own resource group: one subnet without a way out, one
    // behind a NAT gateway.
    await clients.resources.resourceGroups.createOrUpdate('network-rg', { location: 'eastus' });
    const nat = await clients.network.natGateways.beginCreateOrUpdateAndWait('network-rg', 'egress', {
      location: 'eastus',
      sku: { name: 'Standard' },
    });
    await clients.network.virtualNetworks.beginCreateOrUpdateAndWait('network-rg', 'user-net', {
      location: 'eastus',
      addressSpace: { addressPrefixes: ['10.8.0.0/16'] },
      subnets: [
        { name: 'isolated', addressPrefix: '10.8.0.0/24' },
        { name: 'private', addressPrefix: '10.8.1.0/24', natGateway: { id: nat.id } },
      ],
    });
    catalog = emulatorCatalog(emulator.azure);
  });
  afterAll(() => emulator?.close());

  /** Creates the backend of `backendConfig` and launches `names.length` CPU VMs in eastus with it. */
  async function launch<const Names extends readonly string[]>(
    backendConfig: AzureBackendConfigWithCreds,
    ...names: Names
  ): Promise<{ [Index in keyof Names]: Launched }> {
    const record = await configurator.createBackend('main', backendConfig);
    const compute = createAzureBackend({
      config: azureConfigModels.configFromRecord(record),
      catalog,
      pollIntervalMs: 20,
    });
    return (await Promise.all(names.map((name) => launchOne(compute, name)))) as {
      [Index in keyof Names]: Launched;
    };
  }

  type Launched = Awaited<ReturnType<typeof launchOne>>;

  async function launchOne(compute: ReturnType<typeof createAzureBackend>, name: string) {
    const offer = (await compute.getOffers(anyCpuOfferRequirements())).find(
      (each) => !each.instance.resources.spot,
    );
    if (!offer) throw new Error('no on-demand offer');
    const instance = conformanceInstanceConfiguration({
      instanceId: `instance-${name}`,
      agentToken: 'token',
      instanceName: name,
      projectName: 'main',
      keys,
    });
    const created = await compute.createInstance(offer, instance, null);
    const data = await compute.updateProvisioningData(created);
    const vm = await clients.compute.virtualMachines.get('dstack-main', created.instance_id);
    const nicId = vm.networkProfile?.networkInterfaces?.[0]?.id ?? '';
    const nic = await clients.network.networkInterfaces.get('dstack-main', nameFromId(nicId));
    return { data, vm, ipConfiguration: nic.ipConfigurations?.[0] };
  }

  const refusal = async (backendConfig: AzureBackendConfigWithCreds) =>
    configurator.validateConfig(backendConfig, validateOptions).then(
      () => undefined,
      (error: unknown) => error,
    );

  it("puts VMs in the user's network of vpc_ids, making no network of the backend's", async () => {
    const backendConfig = config({ vpc_ids: { eastus: 'network-rg/user-net' } });
    await configurator.validateConfig(backendConfig, validateOptions);

    const [{ ipConfiguration, data }] = await launch(backendConfig, 'in-vpc');

    expect(ipConfiguration?.subnet?.id).toMatch(
      /\/resourceGroups\/network-rg\/.*\/virtualNetworks\/user-net\/subnets\/isolated$/,
    );
    expect(data.hostname).not.toBeNull();
    const networks = [];
    for await (const network of clients.network.virtualNetworks.list('dstack-main'))
      networks.push(network.name);
    expect(networks).toEqual([]);
  });

  it('without public IPs: refuses a subnet with no way out, uses one behind a NAT gateway at its private IP', async () => {
    const isolated = config({ public_ips: false, subnet_ids: { eastus: 'network-rg/user-net/isolated' } });
    const failure = await refusal(isolated);
    expect(ServerClientError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ fields: [['subnet_ids', 'eastus']] });
    expect(String(failure)).toContain('does not have outbound internet connectivity');
    // vpc_ids without public IPs takes the first subnet with a way out.
    await configurator.validateConfig(
      config({ public_ips: false, vpc_ids: { eastus: 'network-rg/user-net' } }),
      validateOptions,
    );

    const privateConfig = config({
      public_ips: false,
      subnet_ids: { eastus: 'network-rg/user-net/private' },
    });
    await configurator.validateConfig(privateConfig, validateOptions);
    const before = emulator.azure.state().publicIpAddresses.length;
    const [{ ipConfiguration, data }] = await launch(privateConfig, 'private');

    expect(ipConfiguration?.subnet?.id).toMatch(/\/subnets\/private$/);
    expect(ipConfiguration?.publicIPAddress).toBeUndefined();
    expect(emulator.azure.state().publicIpAddresses.length).toBe(before);
    expect(data).toMatchObject({ public_ip_enabled: false, hostname: ipConfiguration?.privateIPAddress });
  });

  it('names the field of a network Azure does not have, or one it cannot read', async () => {
    const missing = await refusal(config({ vpc_ids: { eastus: 'network-rg/absent' } }));
    expect(missing).toMatchObject({ fields: [['vpc_ids', 'eastus']] });
    expect(String(missing)).toContain('Network absent not found');
    const missingSubnet = await refusal(config({ subnet_ids: { eastus: 'network-rg/user-net/absent' } }));
    expect(missingSubnet).toMatchObject({ fields: [['subnet_ids', 'eastus']] });

    const cases: [Partial<AzureBackendConfigWithCreds>, string[]][] = [
      [{ public_ips: false }, ['public_ips']],
      [{ vpc_ids: { eastus: 'user-net' } }, ['vpc_ids', 'eastus']],
      [{ subnet_ids: { eastus: 'network-rg/user-net' } }, ['subnet_ids', 'eastus']],
      [{ vm_managed_identity: 'identity-only' }, ['vm_managed_identity']],
      [{ regions: ['eastus', 'westeurope'], vpc_ids: { eastus: 'network-rg/user-net' } }, ['vpc_ids']],
      [
        { vpc_ids: { eastus: 'network-rg/user-net' }, subnet_ids: { eastus: 'network-rg/user-net/private' } },
        ['subnet_ids'],
      ],
    ];
    for (const [extra, field] of cases) {
      expect(() => parseAzureBackendConfig(config(extra))).toThrow(
        expect.objectContaining({ fields: [field] }),
      );
    }
  });

  it('gives VMs the managed identity of vm_managed_identity, which must exist', async () => {
    const absent = await refusal(config({ vm_managed_identity: 'identity-rg/absent' }));
    expect(absent).toMatchObject({ fields: [['vm_managed_identity']] });
    expect(String(absent)).toContain('Managed identity absent not found in resource group identity-rg');

    const identityId = emulator.azure.createManagedIdentity('identity-rg', 'jobs', 'eastus');
    const withIdentity = config({ vm_managed_identity: 'identity-rg/jobs' });
    await configurator.validateConfig(withIdentity, validateOptions);
    const [{ vm }] = await launch(withIdentity, 'with-identity');

    expect(vm.identity?.type).toBe('UserAssigned');
    expect(Object.keys(vm.identity?.userAssignedIdentities ?? {})).toEqual([identityId]);
  });

  it("puts a region's VMs in one subnet, on different private IPs (multinode)", async () => {
    const [first, second] = await launch(config({}), 'node-0', 'node-1');

    expect(first.ipConfiguration?.subnet?.id).toBe(second.ipConfiguration?.subnet?.id);
    expect(first.ipConfiguration?.subnet?.id).toMatch(/dstack-main-eastus-default-subnet$/);
    expect(first.data.internal_ip).not.toBe(second.data.internal_ip);
  });
});
