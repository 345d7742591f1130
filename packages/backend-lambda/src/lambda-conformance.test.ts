import { testBackend } from '@dstack/testing';
import plugin from './index.js';
import { emulatorConfig, startLambdaTestEmulator } from './lambda-emulator.test.helpers.js';

// The contract suite against the Lambda emulator: the backend's undici client speaks Lambda's REST
// API to it. Its instances get made-up addresses here (no hosts); the shim is started by logging in
// to a real host, which the server's lambda-emulator.test.ts does on emulated hosts.
testBackend({
  plugin,
  packageName: '@dstack/backend-lambda',
  capabilities: ['create-instance', 'privileged', 'instance-volumes'],
  emulator: () => startLambdaTestEmulator(),
  create: ({ emulator }) => emulatorConfig(emulator),
  invalidCredentials: {
    create: ({ emulator }) =>
      emulatorConfig(emulator, { creds: { type: 'api_key', api_key: 'secret_not-a-lambda-key' } }),
    field: ['creds', 'api_key'],
  },
  provisioning: { intervalMs: 50 },
  skip: {
    provisioning:
      'Lambda has no user data: the backend starts the shim by logging in to the instance, which needs a real host (server test lambda-emulator.test.ts)',
  },
});
