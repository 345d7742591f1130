import { InvalidCredentialsError, ServerClientError } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { awsConfigModels } from './aws-config.js';
import { invalidCredentials, parseAwsBackendConfig, refuseDisabledDefaultCreds } from './aws-configurator.js';
import plugin, { type AwsBackendConfigWithCreds } from './index.js';

const apiKeyConfig: AwsBackendConfigWithCreds = {
  type: 'aws',
  regions: ['region-a', 'region-b'],
  creds: { type: 'access_key', access_key: 'AKIAEXAMPLE', secret_key: 'secret-key' },
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

describe('aws config models', () => {
  it('accepts each kind of creds and nothing else', () => {
    const schema = awsConfigModels.backendConfigWithCreds;

    expect(schema.parse(apiKeyConfig)).toEqual(apiKeyConfig);
    expect(schema.parse({ type: 'aws', creds: { type: 'default' } })).toEqual({
      type: 'aws',
      creds: { type: 'default' },
    });
    expect(schema.safeParse({ type: 'aws', creds: { type: 'password', password: 'x' } }).success).toBe(false);
    expect(schema.safeParse({ type: 'aws', creds: { type: 'access_key' } }).success).toBe(false);
    expect(schema.safeParse({ type: 'aws' }).success).toBe(false);
  });

  it('rejects unknown fields, naming them', () => {
    const schema = awsConfigModels.backendConfigWithCreds;

    const misspelt = schema.safeParse({ ...apiKeyConfig, region: ['region-a'] });
    const extraCreds = schema.safeParse({ ...apiKeyConfig, creds: { ...apiKeyConfig.creds, token: 'x' } });

    expect(misspelt.success).toBe(false);
    expect(JSON.stringify(misspelt.error?.issues)).toContain('region');
    expect(extraCreds.success).toBe(false);
    expect(JSON.stringify(extraCreds.error?.issues)).toContain('token');
    expect(awsConfigModels.backendConfig.safeParse({ type: 'aws', creds: apiKeyConfig.creds }).success).toBe(
      false,
    );
  });

  it('round-trips through the stored record, keeping creds out of the config', async () => {
    const configurator = plugin.createConfigurator();

    const stored = record(await configurator.createBackend('main', apiKeyConfig));

    expect(JSON.parse(stored.config)).toEqual({ type: 'aws', regions: ['region-a', 'region-b'] });
    expect(JSON.parse(stored.auth)).toEqual(apiKeyConfig.creds);
    expect(configurator.getBackendConfigWithCreds(stored)).toEqual(apiKeyConfig);
    expect(configurator.getBackendConfigWithoutCreds(stored)).toEqual({
      type: 'aws',
      regions: ['region-a', 'region-b'],
    });
    expect(awsConfigModels.configFromRecord(stored)).toEqual(apiKeyConfig);
  });
});

describe('aws config checks', () => {
  it('names the field the schema rejects', () => {
    const bad: AwsBackendConfigWithCreds = { ...apiKeyConfig, regions: [] };

    const failure = catchError(() => parseAwsBackendConfig(bad));

    expect(ServerClientError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ fields: [['regions']] });
    expect(
      catchError(() => parseAwsBackendConfig({ type: 'aws', creds: { type: 'access_key' } })),
    ).toMatchObject({
      fields: [['creds', 'access_key']],
    });
  });

  it('refuses default creds only when they are not enabled, saying which setting enables them', () => {
    const fromFile = { origin: 'server_config', defaultCredsEnabled: false } as const;
    const failure = catchError(() => refuseDisabledDefaultCreds({ type: 'default' }, fromFile));

    expect(ServerClientError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ fields: [['creds', 'type']] });
    expect(String(failure)).toContain('DSTACK_DEFAULT_CREDS_DISABLED');
    const fromApi = catchError(() =>
      refuseDisabledDefaultCreds({ type: 'default' }, { origin: 'api', defaultCredsEnabled: false }),
    );
    expect(String(fromApi)).toContain('DSTACK_SERVER_ALLOW_DEFAULT_CREDS=true');
    expect(() =>
      refuseDisabledDefaultCreds({ type: 'default' }, { ...fromFile, defaultCredsEnabled: true }),
    ).not.toThrow();
    expect(() => refuseDisabledDefaultCreds(apiKeyConfig.creds, fromFile)).not.toThrow();
  });

  it('reports refused credentials on the field the user must fix', () => {
    const error = invalidCredentials(apiKeyConfig.creds);

    expect(InvalidCredentialsError.isInstance(error)).toBe(true);
    expect(error.fields).toEqual([['creds', 'access_key']]);
    expect(invalidCredentials({ type: 'default' }).fields).toEqual([['creds', 'type']]);
  });
});
