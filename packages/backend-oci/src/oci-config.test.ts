import { InvalidCredentialsError, ServerClientError } from '@dstack/core';
import { type OciEmulator, startOciEmulator } from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import plugin, { type OciBackendConfigWithCreds } from './index.js';
import { ociConfigModels } from './oci-config.js';
import { invalidCredentials, parseOciBackendConfig, refuseDisabledDefaultCreds } from './oci-configurator.js';

const clientCreds = {
  type: 'client',
  user: 'ocid1.user.oc1..a',
  tenancy: 'ocid1.tenancy.oc1..a',
  key_content: '-----BEGIN PRIVATE KEY-----\n…\n-----END PRIVATE KEY-----\n',
  fingerprint: 'aa:bb',
  region: 'us-ashburn-1',
} as const;
const clientConfig: OciBackendConfigWithCreds = {
  type: 'oci',
  regions: ['us-ashburn-1'],
  creds: clientCreds,
};

/** What `action` threw (or undefined). */
function catchError(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  return undefined;
}

const record = (stored: { config: string; auth: string }) => ({ ...stored, projectId: 'p', backendId: 'b' });
const fromFile = {
  origin: 'server_config',
  defaultCredsEnabled: true,
  customEndpointsAllowed: true,
} as const;

describe('oci config models', () => {
  it("takes dstack's kinds of creds, with dstack's defaults for the config file", () => {
    const schema = ociConfigModels.backendConfigWithCreds;

    expect(schema.parse(clientConfig)).toEqual(clientConfig);
    expect(schema.parse({ type: 'oci', creds: { type: 'default' } })).toEqual({
      type: 'oci',
      creds: { type: 'default', file: '~/.oci/config', profile: 'DEFAULT' },
    });
    expect(schema.safeParse({ type: 'oci', creds: { type: 'api_key', api_key: 'x' } }).success).toBe(false);
    expect(schema.safeParse({ ...clientConfig, compartment: 'x' }).success).toBe(false);
  });

  it('wants exactly one of key_file and key_content, naming the field', () => {
    const both = { ...clientConfig, creds: { ...clientCreds, key_file: '~/.oci/key.pem' } };
    const neither = { ...clientConfig, creds: { ...clientCreds, key_content: null } };

    for (const config of [both, neither]) {
      const failure = catchError(() => parseOciBackendConfig(config));
      expect(ServerClientError.isInstance(failure)).toBe(true);
      expect(failure).toMatchObject({ fields: [['creds', 'key_content']] });
    }
  });

  it('refuses default creds only when they are not enabled, and names creds when OCI refuses them', () => {
    const disabled = catchError(() =>
      refuseDisabledDefaultCreds(
        { type: 'default', file: '~/.oci/config', profile: 'DEFAULT' },
        { ...fromFile, defaultCredsEnabled: false },
      ),
    );
    expect(disabled).toMatchObject({ fields: [['creds', 'type']] });
    const refused = invalidCredentials(clientCreds);
    expect(InvalidCredentialsError.isInstance(refused)).toBe(true);
    expect(refused.fields).toEqual([['creds']]);
  });
});

describe('oci credentials against the emulator (signed requests)', () => {
  let oci: OciEmulator;
  beforeAll(async () => {
    oci = await startOciEmulator();
  });
  afterAll(() => oci?.close());

  const emulatorConfig = (
    extra: Partial<typeof clientCreds> | Record<string, unknown> = {},
  ): OciBackendConfigWithCreds => ({
    type: 'oci',
    regions: ['us-ashburn-1'],
    endpoint_url: oci.url,
    creds: {
      type: 'client',
      user: oci.user.user,
      tenancy: oci.user.tenancy,
      key_content: oci.user.privateKey,
      fingerprint: oci.user.fingerprint,
      region: 'us-ashburn-1',
      ...extra,
    },
  });

  it('accepts the key OCI knows, and stores the config apart from the creds', async () => {
    const configurator = plugin.createConfigurator();
    await configurator.validateConfig(emulatorConfig(), fromFile);

    const stored = record(await configurator.createBackend('main', emulatorConfig()));
    expect(JSON.parse(stored.auth)).toEqual(emulatorConfig().creds);
    expect(configurator.getBackendConfigWithCreds(stored)).toEqual(emulatorConfig());
  });

  it('refuses a key whose signature does not verify, and a region the tenancy lacks', async () => {
    const configurator = plugin.createConfigurator();
    const other = await startOciEmulator();
    const foreignKey = other.user.privateKey;
    await other.close();

    const refused = await configurator
      .validateConfig(emulatorConfig({ key_content: foreignKey }), fromFile)
      .catch((error: unknown) => error);
    expect(InvalidCredentialsError.isInstance(refused)).toBe(true);
    const region = await configurator
      .validateConfig({ ...emulatorConfig(), regions: ['ap-tokyo-1'] }, fromFile)
      .catch((error: unknown) => error);
    expect(region).toMatchObject({ fields: [['regions']] });
  });
});
