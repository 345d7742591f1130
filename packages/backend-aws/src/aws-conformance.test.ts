import { testBackend } from '@dstack/testing';
import { emulatorConfig, startAwsTestEmulator } from './aws-emulator.test.helpers.js';
import plugin from './index.js';

// The contract suite against the EC2 emulator: the real AWS SDK (signing, retries, XML) talks to
// it. Its instances get made-up addresses here (no hosts), so the agent checks are left to
// aws-user-data-boot.test.ts, which boots the user data on emulated hosts.
testBackend({
  plugin,
  packageName: '@dstack/backend-aws',
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
  emulator: () => startAwsTestEmulator(),
  create: ({ emulator }) => emulatorConfig(emulator.aws),
  invalidCredentials: {
    create: ({ emulator }) =>
      emulatorConfig(emulator.aws, {
        creds: { type: 'access_key', access_key: 'AKIAWRONGKEY00000000', secret_key: 'wrong' },
      }),
    field: ['creds', 'access_key'],
  },
  provisioning: { intervalMs: 50 },
  // No gateway instance type: dstack's default, t3.micro, which the emulator has as EC2 does.
});
