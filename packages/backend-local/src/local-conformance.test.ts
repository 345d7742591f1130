import { testBackend } from '@dstack/testing';
import { localBackendPlugin } from './local-plugin.js';

/**
 * The backend contract suite on the real local backend: every instance is a
 * real, detached shim process under the suite's temporary directory. There is
 * no provider, hence no emulator: the capacity test is skipped, and
 * "already gone" means an instance id that never existed.
 */
testBackend({
  plugin: localBackendPlugin,
  packageName: '@dstack/backend-local',
  capabilities: ['create-instance', 'multinode', 'volumes'],
  create: ({ temporaryDirectory }) => ({
    type: 'local',
    instances_dir: temporaryDirectory,
    volumes_dir: `${temporaryDirectory}/volumes`,
  }),
  // The host needs no credentials: there is nothing to reject.
  invalidCredentials: false,
  // The shim announces its port within a second or two; polls are 100 ms apart.
  provisioning: { maxAttempts: 300, intervalMs: 100 },
});
