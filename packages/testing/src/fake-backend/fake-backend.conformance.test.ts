import { testBackend } from '../conformance/test-backend.js';
import { createFakeBackend } from './fake-backend.js';
import { FAKE_BACKEND_VALID_API_KEY } from './fake-backend-config.js';

const validConfig = {
  type: 'fake',
  regions: ['fake-region-1', 'fake-region-2'],
  creds: { type: 'api_key', api_key: FAKE_BACKEND_VALID_API_KEY },
};
const invalidCredentials = {
  create: () => ({ ...validConfig, creds: { type: 'api_key', api_key: 'not-the-key' } }),
  field: ['creds', 'api_key'],
};

// A VM backend whose instances boot a real shim after a few polls.
const vmCloud = createFakeBackend({ bootAgents: true, provisioningPolls: 3 });
testBackend({
  name: 'fake VM backend (real shim agents) conformance',
  plugin: vmCloud.plugin,
  capabilities: ['create-instance'],
  emulator: async () => vmCloud.asEmulator(),
  create: () => validConfig,
  invalidCredentials,
  provisioning: { intervalMs: 10 },
});

// A container backend (no create-instance) whose instances boot a real runner.
const containerCloud = createFakeBackend({ bootAgents: true, computeKind: 'container', capabilities: [] });
testBackend({
  name: 'fake container backend (real runner agents) conformance',
  plugin: containerCloud.plugin,
  capabilities: [],
  emulator: async () => containerCloud.asEmulator(),
  create: () => validConfig,
  invalidCredentials,
  provisioning: { intervalMs: 10 },
});
