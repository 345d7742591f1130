import { generateKeyPairSync } from 'node:crypto';
import { testBackend } from '@dstack/testing';
import plugin from './index.js';
import { emulatorConfig, startOciTestEmulator } from './oci-emulator.test.helpers.js';

/** A key OCI does not know: its signatures do not verify against the user's public key. */
const otherKey = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  publicKeyEncoding: { type: 'spki', format: 'pem' },
}).privateKey;

// The contract suite against the OCI emulator: OCI's own SDK (oci-core, oci-identity,
// oci-marketplace) signs every request with the user's API key and the emulator verifies the
// signature. Offers come from the bundled snapshot's oci.csv (the emulator's shapes and prices,
// as the collector gathers them). Instances get made-up addresses here (no hosts).
testBackend({
  plugin,
  packageName: '@dstack/backend-oci',
  capabilities: ['create-instance', 'privileged', 'instance-volumes', 'multinode'],
  emulator: () => startOciTestEmulator(),
  create: ({ emulator }) => emulatorConfig(emulator.oci),
  invalidCredentials: {
    create: ({ emulator }) => {
      const config = emulatorConfig(emulator.oci);
      return { ...config, creds: { ...config.creds, key_content: otherKey } as typeof config.creds };
    },
    field: ['creds'],
  },
  provisioning: { intervalMs: 50 },
});
