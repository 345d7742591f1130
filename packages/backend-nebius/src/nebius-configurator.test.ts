import { InvalidCredentialsError, ServerClientError } from '@dstack/core';
import type { NebiusEmulator } from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NebiusConfigurator } from './nebius-configurator.js';
import { emulatorConfig, startNebiusTestEmulator } from './nebius-emulator.test.helpers.js';

const fromFile = {
  origin: 'server_config',
  defaultCredsEnabled: true,
  customEndpointsAllowed: true,
} as const;
const fromApi = { origin: 'api', defaultCredsEnabled: false, customEndpointsAllowed: false } as const;

let emulator: NebiusEmulator;
const configurator = new NebiusConfigurator();

/** What `promise` rejected with (or undefined). */
const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

beforeAll(async () => {
  emulator = await startNebiusTestEmulator();
});
afterAll(() => emulator?.close());

describe('NebiusConfigurator.validateConfig on the Nebius emulator', () => {
  it("accepts the service account with the tenancy's regions and projects", async () => {
    await configurator.validateConfig(emulatorConfig(emulator, { regions: ['eu-west1'] }), fromFile);
    await configurator.validateConfig(emulatorConfig(emulator, { projects: ['project-e01west1'] }), fromFile);
  });

  it('names the field of a setting the tenancy does not have', async () => {
    const regions = await rejection(
      configurator.validateConfig(emulatorConfig(emulator, { regions: ['mars-1'] }), fromFile),
    );
    expect(InvalidCredentialsError.isInstance(regions)).toBe(true);
    expect(regions).toMatchObject({ fields: [['regions']] });
    expect(String((regions as Error).message)).toContain('eu-north1');
    expect(
      await rejection(
        configurator.validateConfig(emulatorConfig(emulator, { projects: ['project-nope'] }), fromFile),
      ),
    ).toMatchObject({ fields: [['projects']] });
  });

  it('refuses from the API a key file on the server and a custom endpoint, before any call', async () => {
    const config = emulatorConfig(emulator);
    const withFile = {
      ...config,
      creds: { ...config.creds, private_key_content: null, private_key_file: '/etc/key.pem' },
    };
    const file = await rejection(
      configurator.validateConfig(withFile, { ...fromApi, customEndpointsAllowed: true }),
    );
    expect(ServerClientError.isInstance(file)).toBe(true);
    expect(file).toMatchObject({ fields: [['creds', 'private_key_file']] });
    const credentialsFile = {
      ...config,
      creds: { type: 'service_account' as const, filename: '/etc/nebius.json' },
    };
    expect(
      await rejection(
        configurator.validateConfig(credentialsFile, { ...fromApi, customEndpointsAllowed: true }),
      ),
    ).toMatchObject({ fields: [['creds', 'filename']] });
    expect(await rejection(configurator.validateConfig(config, fromApi))).toMatchObject({
      fields: [['endpoint_url']],
    });
  });

  it('stops at the signal', async () => {
    const controller = new AbortController();
    controller.abort(new Error('validation deadline'));
    const failure = await rejection(
      configurator.validateConfig(emulatorConfig(emulator), { ...fromFile, signal: controller.signal }),
    );
    expect(String(failure)).toContain('validation deadline');
  });
});
