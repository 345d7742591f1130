import { testBackend } from '@dstack/testing';
import plugin from './index.js';
import { emulatorConfig, startVastAiTestEmulator } from './vastai-emulator.test.helpers.js';

// The contract suite against the Vast.ai emulator: the real undici client talks to it. Its rentals
// get made-up ports here (no containers), so the agent checks are left to
// vastai-rental-boot.test.ts, which runs the entrypoint in the emulator's Docker containers.
testBackend({
  plugin,
  packageName: '@dstack/backend-vastai',
  capabilities: [],
  emulator: () => startVastAiTestEmulator(),
  create: ({ emulator }) => emulatorConfig(emulator),
  invalidCredentials: {
    create: ({ emulator }) =>
      emulatorConfig(emulator, { creds: { type: 'api_key', api_key: 'rejected-api-key' } }),
    field: ['creds', 'api_key'],
  },
  provisioning: { intervalMs: 50 },
  skip: {
    // The contract lets a backend keep a better order; dstack keeps Vast.ai's (by host score).
    'offers-order':
      "offers keep Vast.ai's score order, as dstack's (the contract allows a backend's own order)",
  },
});
