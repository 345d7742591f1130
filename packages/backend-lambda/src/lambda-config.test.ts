import { InvalidCredentialsError, ServerClientError } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import plugin, { type LambdaBackendConfigWithCreds } from './index.js';
import { lambdaConfigModels } from './lambda-config.js';
import { invalidCredentials, parseLambdaBackendConfig } from './lambda-configurator.js';

const apiKeyConfig: LambdaBackendConfigWithCreds = {
  type: 'lambda',
  regions: ['region-a', 'region-b'],
  creds: { type: 'api_key', api_key: 'secret-key' },
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

describe('lambda config models', () => {
  it('accepts each kind of creds and nothing else', () => {
    const schema = lambdaConfigModels.backendConfigWithCreds;

    expect(schema.parse(apiKeyConfig)).toEqual(apiKeyConfig);
    // dstack's Lambda backend takes an API key only: no default creds.
    expect(schema.safeParse({ type: 'lambda', creds: { type: 'default' } }).success).toBe(false);
    expect(schema.parse({ ...apiKeyConfig, endpoint_url: 'http://127.0.0.1:9/api/v1' }).endpoint_url).toBe(
      'http://127.0.0.1:9/api/v1',
    );
    expect(schema.safeParse({ ...apiKeyConfig, endpoint_url: 'not a url' }).success).toBe(false);
    expect(schema.safeParse({ type: 'lambda', creds: { type: 'password', password: 'x' } }).success).toBe(
      false,
    );
    expect(schema.safeParse({ type: 'lambda', creds: { type: 'api_key' } }).success).toBe(false);
    expect(schema.safeParse({ type: 'lambda' }).success).toBe(false);
  });

  it('rejects unknown fields, naming them', () => {
    const schema = lambdaConfigModels.backendConfigWithCreds;

    const misspelt = schema.safeParse({ ...apiKeyConfig, region: ['region-a'] });
    const extraCreds = schema.safeParse({ ...apiKeyConfig, creds: { ...apiKeyConfig.creds, token: 'x' } });

    expect(misspelt.success).toBe(false);
    expect(JSON.stringify(misspelt.error?.issues)).toContain('region');
    expect(extraCreds.success).toBe(false);
    expect(JSON.stringify(extraCreds.error?.issues)).toContain('token');
    expect(
      lambdaConfigModels.backendConfig.safeParse({ type: 'lambda', creds: apiKeyConfig.creds }).success,
    ).toBe(false);
  });

  it('round-trips through the stored record, keeping creds out of the config', async () => {
    const configurator = plugin.createConfigurator();

    const stored = record(await configurator.createBackend('main', apiKeyConfig));

    expect(JSON.parse(stored.config)).toEqual({ type: 'lambda', regions: ['region-a', 'region-b'] });
    expect(JSON.parse(stored.auth)).toEqual(apiKeyConfig.creds);
    expect(configurator.getBackendConfigWithCreds(stored)).toEqual(apiKeyConfig);
    expect(configurator.getBackendConfigWithoutCreds(stored)).toEqual({
      type: 'lambda',
      regions: ['region-a', 'region-b'],
    });
    expect(lambdaConfigModels.configFromRecord(stored)).toEqual(apiKeyConfig);
  });
});

describe('lambda config checks', () => {
  it('names the field the schema rejects', () => {
    const bad: LambdaBackendConfigWithCreds = { ...apiKeyConfig, regions: [] };

    const failure = catchError(() => parseLambdaBackendConfig(bad));

    expect(ServerClientError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ fields: [['regions']] });
    expect(
      catchError(() => parseLambdaBackendConfig({ type: 'lambda', creds: { type: 'api_key' } })),
    ).toMatchObject({
      fields: [['creds', 'api_key']],
    });
  });

  it('reports refused credentials on the field the user must fix', () => {
    const error = invalidCredentials(apiKeyConfig.creds);

    expect(InvalidCredentialsError.isInstance(error)).toBe(true);
    expect(error.fields).toEqual([['creds', 'api_key']]);
  });
});
