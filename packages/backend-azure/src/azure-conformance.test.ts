import { testBackend } from '@dstack/testing';
import { emulatorConfig, startAzureTestEmulator, useEmulatorCatalog } from './azure-emulator.test.helpers.js';
import plugin from './index.js';

// The contract suite against the Azure emulator: @azure/identity's ClientSecretCredential gets
// its token from the emulated Entra ID, and the @azure/arm-* clients call the emulated Resource
// Manager (long-running operations included) over TLS. VMs get made-up addresses here (no hosts).
testBackend({
  plugin,
  packageName: '@dstack/backend-azure',
  capabilities: ['create-instance', 'privileged', 'instance-volumes', 'multinode'],
  emulator: async () => {
    const emulator = await startAzureTestEmulator();
    useEmulatorCatalog(emulator.azure);
    return emulator;
  },
  create: ({ emulator }) => emulatorConfig(emulator.azure),
  invalidCredentials: {
    create: ({ emulator }) =>
      emulatorConfig(emulator.azure, {
        creds: {
          type: 'client',
          client_id: emulator.azure.servicePrincipal.clientId,
          client_secret: 'not-the-secret',
        },
      }),
    field: ['creds', 'client_secret'],
  },
  provisioning: { intervalMs: 50 },
});
