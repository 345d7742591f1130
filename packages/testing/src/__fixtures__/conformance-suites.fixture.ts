/**
 * Runs `testBackend` on backends that break the contract; the child vitest
 * that `test-backend.test.ts` starts reports which tests fail or are todo.
 * Not part of the normal test run (`.fixture.ts`).
 */
import { testBackend } from '../conformance/test-backend.js';
import { FAKE_BACKEND_VALID_API_KEY } from '../fake-backend/fake-backend-config.js';
import { createBrokenBackend, createStubBackend } from './broken-backends.js';

const validConfig = { type: 'fake', creds: { type: 'api_key', api_key: FAKE_BACKEND_VALID_API_KEY } };
const invalidCredentials = {
  create: () => ({ ...validConfig, creds: { type: 'api_key', api_key: 'wrong' } }),
  field: ['creds', 'api_key'],
};

const broken = createBrokenBackend();
testBackend({
  name: 'broken',
  plugin: broken.plugin,
  capabilities: [],
  emulator: async () => broken.cloud,
  create: () => validConfig,
  invalidCredentials,
  provisioning: { maxAttempts: 5, intervalMs: 1 },
});

testBackend({
  name: 'stub',
  plugin: createStubBackend(),
  capabilities: [],
  create: () => validConfig,
  invalidCredentials,
});

testBackend({
  name: 'stub configurator',
  plugin: createStubBackend({ stubConfigurator: true }),
  capabilities: [],
  create: () => validConfig,
  invalidCredentials,
  skip: { 'offers-order': 'checks that a skip reason is reported' },
});

testBackend({
  name: 'not a plugin',
  plugin: { type: 'fake' },
  capabilities: [],
  create: () => validConfig,
  invalidCredentials,
});
