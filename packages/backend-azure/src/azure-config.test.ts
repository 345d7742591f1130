import { InvalidCredentialsError, ServerClientError } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { azureConfigModels } from './azure-config.js';
import {
  invalidCredentials,
  parseAzureBackendConfig,
  refuseDisabledDefaultCreds,
} from './azure-configurator.js';
import {
  type AzureTestEmulator,
  emulatorConfig,
  startAzureTestEmulator,
} from './azure-emulator.test.helpers.js';
import plugin, { type AzureBackendConfigWithCreds } from './index.js';

const clientConfig: AzureBackendConfigWithCreds = {
  type: 'azure',
  tenant_id: 'tenant-a',
  subscription_id: 'subscription-a',
  regions: ['eastus', 'westeurope'],
  creds: { type: 'client', client_id: 'client-a', client_secret: 'secret-a' },
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

describe('azure config models', () => {
  it("accepts dstack's kinds of creds and nothing else", () => {
    const schema = azureConfigModels.backendConfigWithCreds;
    const base = { type: 'azure', tenant_id: 't', subscription_id: 's' };

    expect(schema.parse(clientConfig)).toEqual(clientConfig);
    expect(schema.parse({ ...base, creds: { type: 'default' } })).toEqual({
      ...base,
      creds: { type: 'default' },
    });
    expect(schema.safeParse({ ...base, creds: { type: 'api_key', api_key: 'x' } }).success).toBe(false);
    expect(schema.safeParse({ ...base, creds: { type: 'client', client_id: 'x' } }).success).toBe(false);
    expect(
      schema.safeParse({ type: 'azure', subscription_id: 's', creds: { type: 'default' } }).success,
    ).toBe(false);
  });

  it('rejects unknown fields, naming them', () => {
    const misspelt = azureConfigModels.backendConfigWithCreds.safeParse({
      ...clientConfig,
      region: ['eastus'],
    });

    expect(misspelt.success).toBe(false);
    expect(JSON.stringify(misspelt.error?.issues)).toContain('region');
  });
});

describe('azure config checks', () => {
  it('names the field the schema rejects, and the network fields it cannot take', () => {
    expect(catchError(() => parseAzureBackendConfig({ ...clientConfig, regions: [] }))).toMatchObject({
      fields: [['regions']],
    });
    for (const [extra, field] of [
      [{ vpc_ids: { eastus: 'group/network' } }, ['vpc_ids']],
      [{ subnet_ids: { eastus: 'group/network/subnet', westeurope: 'group' } }, ['subnet_ids', 'westeurope']],
      [{ vm_managed_identity: 'group/identity/extra' }, ['vm_managed_identity']],
      [{ public_ips: false }, ['public_ips']],
    ] as const) {
      const failure = catchError(() => parseAzureBackendConfig({ ...clientConfig, ...extra }));
      expect(ServerClientError.isInstance(failure)).toBe(true);
      expect(failure).toMatchObject({ fields: [field] });
    }
    expect(
      parseAzureBackendConfig({
        ...clientConfig,
        public_ips: false,
        vpc_ids: { eastus: 'group/network' },
        subnet_ids: { westeurope: 'group/network/subnet' },
        vm_managed_identity: 'group/identity',
      }),
    ).toMatchObject({ public_ips: false });
  });

  it('refuses default creds only when they are not enabled', () => {
    const fromFile = { origin: 'server_config', defaultCredsEnabled: false } as const;
    const failure = catchError(() => refuseDisabledDefaultCreds({ type: 'default' }, fromFile));

    expect(failure).toMatchObject({ fields: [['creds', 'type']] });
    expect(() =>
      refuseDisabledDefaultCreds({ type: 'default' }, { ...fromFile, defaultCredsEnabled: true }),
    ).not.toThrow();
  });

  it("reports refused credentials on dstack's fields", () => {
    const error = invalidCredentials(clientConfig.creds);

    expect(InvalidCredentialsError.isInstance(error)).toBe(true);
    expect(error.fields).toEqual([
      ['creds', 'tenant_id'],
      ['creds', 'client_id'],
      ['creds', 'client_secret'],
    ]);
    expect(invalidCredentials({ type: 'default' }).fields).toEqual([['creds', 'type']]);
  });
});

describe('azure backend records', () => {
  let emulator: AzureTestEmulator;
  beforeAll(async () => {
    emulator = await startAzureTestEmulator();
  });
  afterAll(() => emulator?.close());

  it("creates dstack's resource group and network resources, and round-trips the record", async () => {
    const configurator = plugin.createConfigurator();
    const config = emulatorConfig(emulator.azure);

    const stored = record(await configurator.createBackend('main', config));

    const { creds, ...withoutCreds } = config;
    expect(JSON.parse(stored.config)).toEqual({ ...withoutCreds, resource_group: 'dstack-main' });
    expect(JSON.parse(stored.auth)).toEqual(creds);
    expect(configurator.getBackendConfigWithCreds(stored)).toEqual({
      ...config,
      resource_group: 'dstack-main',
    });
    expect(emulator.azure.state().resourceGroups).toEqual(['dstack-main']);
  });
});
