import { InvalidCredentialsError, ServerClientError } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import plugin, { type VerdaBackendConfigWithCreds } from './index.js';
import { verdaConfigModels } from './verda-config.js';
import { invalidCredentials, parseVerdaBackendConfig } from './verda-configurator.js';

const apiKeyConfig: VerdaBackendConfigWithCreds = {
  type: 'verda',
  regions: ['region-a', 'region-b'],
  creds: { type: 'api_key', client_id: 'client-1', client_secret: 'secret-key' },
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

describe('verda config models', () => {
  it('accepts each kind of creds and nothing else', () => {
    const schema = verdaConfigModels.backendConfigWithCreds;

    expect(schema.parse(apiKeyConfig)).toEqual(apiKeyConfig);
    // dstack's Verda backend takes OAuth2 client credentials only: no default creds.
    expect(schema.safeParse({ type: 'verda', creds: { type: 'default' } }).success).toBe(false);
    expect(
      schema.safeParse({ type: 'verda', creds: { type: 'api_key', client_id: 'client-1' } }).success,
    ).toBe(false);
    expect(schema.safeParse({ type: 'verda', creds: { type: 'password', password: 'x' } }).success).toBe(
      false,
    );
    expect(schema.safeParse({ type: 'verda', creds: { type: 'api_key' } }).success).toBe(false);
    expect(schema.safeParse({ type: 'verda' }).success).toBe(false);
  });

  it('rejects unknown fields, naming them', () => {
    const schema = verdaConfigModels.backendConfigWithCreds;

    const misspelt = schema.safeParse({ ...apiKeyConfig, region: ['region-a'] });
    const extraCreds = schema.safeParse({ ...apiKeyConfig, creds: { ...apiKeyConfig.creds, token: 'x' } });

    expect(misspelt.success).toBe(false);
    expect(JSON.stringify(misspelt.error?.issues)).toContain('region');
    expect(extraCreds.success).toBe(false);
    expect(JSON.stringify(extraCreds.error?.issues)).toContain('token');
    expect(
      verdaConfigModels.backendConfig.safeParse({ type: 'verda', creds: apiKeyConfig.creds }).success,
    ).toBe(false);
  });

  it('round-trips through the stored record, keeping creds out of the config', async () => {
    const configurator = plugin.createConfigurator();

    const stored = record(await configurator.createBackend('main', apiKeyConfig));

    expect(JSON.parse(stored.config)).toEqual({ type: 'verda', regions: ['region-a', 'region-b'] });
    expect(JSON.parse(stored.auth)).toEqual(apiKeyConfig.creds);
    expect(configurator.getBackendConfigWithCreds(stored)).toEqual(apiKeyConfig);
    expect(configurator.getBackendConfigWithoutCreds(stored)).toEqual({
      type: 'verda',
      regions: ['region-a', 'region-b'],
    });
    expect(verdaConfigModels.configFromRecord(stored)).toEqual(apiKeyConfig);
  });
});

describe('verda config checks', () => {
  it('names the field the schema rejects', () => {
    const bad: VerdaBackendConfigWithCreds = { ...apiKeyConfig, regions: [] };

    const failure = catchError(() => parseVerdaBackendConfig(bad));

    expect(ServerClientError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ fields: [['regions']] });
    expect(
      catchError(() => parseVerdaBackendConfig({ type: 'verda', creds: { type: 'api_key' } })),
    ).toMatchObject({
      fields: [['creds', 'client_id']],
    });
  });

  it('reports refused credentials on the field the user must fix', () => {
    const error = invalidCredentials(apiKeyConfig.creds);

    expect(InvalidCredentialsError.isInstance(error)).toBe(true);
    expect(error.fields).toEqual([
      ['creds', 'client_id'],
      ['creds', 'client_secret'],
    ]);
  });
});
