import { testBackend } from '@dstack/testing';
import plugin from './index.js';

// The contract suite every backend runs (@dstack/testing). Checks of methods
// that are still `notImplemented` stubs are reported as todo, not failures.
//
// Until there is an emulator of the verda API, the credentials below reach
// no provider. Write one with the emulator toolkit of @dstack/testing
// (`startEmulatorServer` speaking the provider's wire protocol), pass it as
// `emulator`, point the config at its URL, and make it refuse the bad key.
testBackend({
  plugin,
  packageName: '@dstack/backend-verda',
  capabilities: ['create-instance', 'privileged', 'instance-volumes'],
  create: () => ({ type: 'verda', creds: { type: 'api_key', api_key: 'valid-api-key' } }),
  invalidCredentials: {
    create: () => ({ type: 'verda', creds: { type: 'api_key', api_key: 'rejected-api-key' } }),
    field: ['creds', 'api_key'],
  },
});
