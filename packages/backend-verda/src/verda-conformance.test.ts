import { testBackend } from '@dstack/testing';
import plugin from './index.js';
import { emulatorConfig, startVerdaTestEmulator } from './verda-emulator.test.helpers.js';

// The contract suite against the Verda emulator: the backend's undici client gets its OAuth2 token
// and speaks Verda's REST API to it. Its instances get made-up addresses here (no hosts), so no
// agent boots: the startup script's shim is the same bootstrap script Lambda's e2e test runs.
testBackend({
  plugin,
  packageName: '@dstack/backend-verda',
  capabilities: ['create-instance', 'privileged', 'instance-volumes'],
  emulator: () => startVerdaTestEmulator(),
  create: ({ emulator }) => emulatorConfig(emulator),
  invalidCredentials: {
    create: ({ emulator }) =>
      emulatorConfig(emulator, {
        creds: { type: 'api_key', client_id: emulator.client.clientId, client_secret: 'not-the-secret' },
      }),
    field: ['creds', 'client_secret'],
  },
  provisioning: { intervalMs: 50 },
  skip: {
    provisioning:
      'no hosts here: the startup script would start the shim on a real host (core bootstrap script, booted by the Lambda e2e test)',
  },
});
