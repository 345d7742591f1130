import { toyCloudPlugin } from '../__fixtures__/toy-cloud/toy-cloud-backend.js';
import { startToyCloudEmulator, TOY_CLOUD_TOKEN } from '../__fixtures__/toy-cloud/toy-cloud-emulator.js';
import { testBackend } from '../conformance/test-backend.js';

// The whole path on a real HTTP emulator built with the toolkit: undici →
// startEmulatorServer → bootLocalAgent (a real shim) for each running instance.
testBackend({
  name: 'Toy Cloud backend on its emulator conformance',
  plugin: toyCloudPlugin,
  packageName: 'toy-cloud-fixture',
  capabilities: ['create-instance'],
  emulator: startToyCloudEmulator,
  create: ({ emulator }) => ({
    type: 'toycloud',
    endpoint: emulator.url,
    creds: { type: 'api_key', api_key: TOY_CLOUD_TOKEN },
  }),
  invalidCredentials: {
    create: ({ emulator }) => ({
      type: 'toycloud',
      endpoint: emulator.url,
      creds: { type: 'api_key', api_key: 'stolen' },
    }),
    field: ['creds', 'api_key'],
  },
  provisioning: { intervalMs: 20 },
});
