import { testBackend } from '@dstack/testing';
import { emulatorConfig, startGcpTestEmulator } from './gcp-emulator.test.helpers.js';
import plugin from './index.js';

// The contract suite against the GCP emulator: google-auth-library's real JWT signing and token
// exchange, and Compute REST through undici, talk to it. Its instances get made-up addresses here
// (no hosts); the server's gcp-emulator.test.ts boots the user data on emulated hosts.
testBackend({
  plugin,
  packageName: '@dstack/backend-gcp',
  capabilities: [
    'create-instance',
    'privileged',
    'instance-volumes',
    'multinode',
    'placement-groups',
    'volumes',
    'gateways',
    'reservations',
  ],
  emulator: () => startGcpTestEmulator(),
  create: ({ emulator }) => emulatorConfig(emulator.gcp),
  invalidCredentials: {
    // A key the emulator never issued: its signature fails the token exchange (invalid_grant).
    create: async ({ emulator }) => {
      const other = await startGcpTestEmulator();
      const foreignKey = other.gcp.serviceAccountJson();
      await other.close();
      return emulatorConfig(emulator.gcp, {
        creds: {
          type: 'service_account',
          data: JSON.stringify({ ...foreignKey, token_uri: emulator.gcp.tokenUrl }),
        },
      });
    },
    field: ['creds', 'data'],
  },
  provisioning: { intervalMs: 50 },
  // dstack's default, e2-medium, is not among the emulator's machine types.
  gateway: { instanceType: 'n1-standard-1' },
});
