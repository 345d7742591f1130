import { testBackend } from '@dstack/testing';
import { type OciEmulator, startOciEmulator } from '@dstack/testing/emulators';
import plugin from './index.js';

// The contract suite against the OCI emulator, whose every request's HTTP signature is verified
// against the user's API key (oci-common signs, oci-identity calls). The Compute's methods are
// still stubs: their checks are reported as todo.
const config = (oci: OciEmulator, keyContent = oci.user.privateKey) => ({
  type: 'oci',
  regions: ['us-ashburn-1'],
  endpoint_url: oci.url,
  creds: {
    type: 'client',
    user: oci.user.user,
    tenancy: oci.user.tenancy,
    key_content: keyContent,
    fingerprint: oci.user.fingerprint,
    region: 'us-ashburn-1',
  },
});

testBackend({
  plugin,
  packageName: '@dstack/backend-oci',
  capabilities: ['create-instance', 'privileged', 'instance-volumes'],
  emulator: async () => {
    const oci = await startOciEmulator();
    return { oci, close: () => oci.close() };
  },
  create: ({ emulator }) => config(emulator.oci),
  invalidCredentials: {
    // A key OCI never registered for the user: its signature does not verify (401 NotAuthenticated).
    create: async ({ emulator }) => {
      const other = await startOciEmulator();
      await other.close();
      return config(emulator.oci, other.user.privateKey);
    },
    field: ['creds'],
  },
});
