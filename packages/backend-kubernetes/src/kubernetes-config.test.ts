import { InvalidCredentialsError, ServerClientError } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import plugin, { type KubernetesBackendConfigWithCreds } from './index.js';
import { kubernetesConfigModels } from './kubernetes-config.js';
import {
  invalidCredentials,
  parseKubernetesBackendConfig,
  refuseDisabledDefaultCreds,
} from './kubernetes-configurator.js';

const apiKeyConfig: KubernetesBackendConfigWithCreds = {
  type: 'kubernetes',
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

describe('kubernetes config models', () => {
  it('accepts each kind of creds and nothing else', () => {
    const schema = kubernetesConfigModels.backendConfigWithCreds;

    expect(schema.parse(apiKeyConfig)).toEqual(apiKeyConfig);
    expect(schema.parse({ type: 'kubernetes', creds: { type: 'default' } })).toEqual({
      type: 'kubernetes',
      creds: { type: 'default' },
    });
    expect(schema.safeParse({ type: 'kubernetes', creds: { type: 'password', password: 'x' } }).success).toBe(
      false,
    );
    expect(schema.safeParse({ type: 'kubernetes', creds: { type: 'api_key' } }).success).toBe(false);
    expect(schema.safeParse({ type: 'kubernetes' }).success).toBe(false);
  });

  it('rejects unknown fields, naming them', () => {
    const schema = kubernetesConfigModels.backendConfigWithCreds;

    const misspelt = schema.safeParse({ ...apiKeyConfig, region: ['region-a'] });
    const extraCreds = schema.safeParse({ ...apiKeyConfig, creds: { ...apiKeyConfig.creds, token: 'x' } });

    expect(misspelt.success).toBe(false);
    expect(JSON.stringify(misspelt.error?.issues)).toContain('region');
    expect(extraCreds.success).toBe(false);
    expect(JSON.stringify(extraCreds.error?.issues)).toContain('token');
    expect(
      kubernetesConfigModels.backendConfig.safeParse({ type: 'kubernetes', creds: apiKeyConfig.creds })
        .success,
    ).toBe(false);
  });

  it('round-trips through the stored record, keeping creds out of the config', async () => {
    const configurator = plugin.createConfigurator();

    const stored = record(await configurator.createBackend('main', apiKeyConfig));

    expect(JSON.parse(stored.config)).toEqual({ type: 'kubernetes', regions: ['region-a', 'region-b'] });
    expect(JSON.parse(stored.auth)).toEqual(apiKeyConfig.creds);
    expect(configurator.getBackendConfigWithCreds(stored)).toEqual(apiKeyConfig);
    expect(configurator.getBackendConfigWithoutCreds(stored)).toEqual({
      type: 'kubernetes',
      regions: ['region-a', 'region-b'],
    });
    expect(kubernetesConfigModels.configFromRecord(stored)).toEqual(apiKeyConfig);
  });
});

describe('kubernetes config checks', () => {
  it('names the field the schema rejects', () => {
    const bad: KubernetesBackendConfigWithCreds = { ...apiKeyConfig, regions: [] };

    const failure = catchError(() => parseKubernetesBackendConfig(bad));

    expect(ServerClientError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ fields: [['regions']] });
    expect(
      catchError(() => parseKubernetesBackendConfig({ type: 'kubernetes', creds: { type: 'api_key' } })),
    ).toMatchObject({
      fields: [['creds', 'api_key']],
    });
  });

  it('refuses default creds only when they are not enabled', () => {
    const fromFile = { origin: 'server_config', defaultCredsEnabled: false } as const;
    const failure = catchError(() => refuseDisabledDefaultCreds({ type: 'default' }, fromFile));

    expect(ServerClientError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ fields: [['creds', 'type']] });
    expect(() =>
      refuseDisabledDefaultCreds({ type: 'default' }, { ...fromFile, defaultCredsEnabled: true }),
    ).not.toThrow();
    expect(() => refuseDisabledDefaultCreds(apiKeyConfig.creds, fromFile)).not.toThrow();
  });

  it('reports refused credentials on the field the user must fix', () => {
    const error = invalidCredentials(apiKeyConfig.creds);

    expect(InvalidCredentialsError.isInstance(error)).toBe(true);
    expect(error.fields).toEqual([['creds', 'api_key']]);
    expect(invalidCredentials({ type: 'default' }).fields).toEqual([['creds', 'type']]);
  });
});
