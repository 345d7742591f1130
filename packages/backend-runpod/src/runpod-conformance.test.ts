import { testBackend } from '@dstack/testing';
import plugin from './index.js';
import { emulatorConfig, startRunpodTestEmulator } from './runpod-emulator.test.helpers.js';

// The contract suite against the RunPod emulator: the real undici client speaks GraphQL to it, and
// offers come from the emulator's gpuhunt bucket. Its pods get made-up ports here (no containers):
// the runner in a pod's container is runpod-emulator.test.ts' end to end run in the server package.
testBackend({
  plugin,
  packageName: '@dstack/backend-runpod',
  capabilities: [],
  emulator: () => startRunpodTestEmulator(),
  create: ({ emulator }) => emulatorConfig(emulator),
  invalidCredentials: {
    create: ({ emulator }) =>
      emulatorConfig(emulator, { creds: { type: 'api_key', api_key: 'rejected-api-key' } }),
    field: ['creds', 'api_key'],
  },
  provisioning: { intervalMs: 50 },
});
