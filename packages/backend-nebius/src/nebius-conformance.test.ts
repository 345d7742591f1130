import { generateKeyPairSync } from 'node:crypto';
import { testBackend } from '@dstack/testing';
import plugin from './index.js';
import { emulatorConfig, startNebiusTestEmulator } from './nebius-emulator.test.helpers.js';

// The contract suite against the Nebius emulator: the backend's grpc-js client signs its JWT,
// exchanges it for an IAM token and speaks Nebius's gRPC API to it. Its instances get made-up
// addresses here (no hosts), so no agent boots: the cloud-init user data is AWS's, which its
// e2e test boots.
const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();

testBackend({
  plugin,
  packageName: '@dstack/backend-nebius',
  capabilities: ['create-instance', 'privileged', 'instance-volumes', 'multinode', 'placement-groups'],
  emulator: () => startNebiusTestEmulator(),
  create: ({ emulator }) => emulatorConfig(emulator),
  invalidCredentials: {
    create: ({ emulator }) =>
      emulatorConfig(emulator, {
        creds: {
          type: 'service_account',
          service_account_id: emulator.serviceAccount.serviceAccountId,
          public_key_id: emulator.serviceAccount.publicKeyId,
          private_key_content: otherKey,
        },
      }),
    field: ['creds'],
  },
  provisioning: { intervalMs: 50 },
  skip: {
    provisioning:
      'no hosts here: the cloud-init user data would start the shim on a real host (core buildVmUserData, booted by the AWS e2e test)',
  },
});
