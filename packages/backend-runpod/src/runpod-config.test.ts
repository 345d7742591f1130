import { InvalidCredentialsError, ServerClientError } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import plugin, { type RunpodBackendConfigWithCreds } from './index.js';
import { runpodConfigModels } from './runpod-config.js';
import { invalidCredentials, parseRunpodBackendConfig, RunpodConfigurator } from './runpod-configurator.js';

const apiKeyConfig: RunpodBackendConfigWithCreds = {
  type: 'runpod',
  regions: ['US-TX-3', 'US'],
  community_cloud: true,
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

describe('runpod config models', () => {
  it('accepts each kind of creds and nothing else', () => {
    const schema = runpodConfigModels.backendConfigWithCreds;

    expect(schema.parse(apiKeyConfig)).toEqual(apiKeyConfig);
    // RunPod has no ambient credentials: an API key only, as dstack.
    expect(schema.safeParse({ type: 'runpod', creds: { type: 'default' } }).success).toBe(false);
    expect(schema.safeParse({ ...apiKeyConfig, endpoint_url: 'not a url' }).success).toBe(false);
    expect(schema.safeParse({ ...apiKeyConfig, community_cloud: 'yes' }).success).toBe(false);
    expect(schema.safeParse({ type: 'runpod', creds: { type: 'password', password: 'x' } }).success).toBe(
      false,
    );
    expect(schema.safeParse({ type: 'runpod', creds: { type: 'api_key' } }).success).toBe(false);
    expect(schema.safeParse({ type: 'runpod' }).success).toBe(false);
  });

  it('rejects unknown fields, naming them', () => {
    const schema = runpodConfigModels.backendConfigWithCreds;

    const misspelt = schema.safeParse({ ...apiKeyConfig, region: ['region-a'] });
    const extraCreds = schema.safeParse({ ...apiKeyConfig, creds: { ...apiKeyConfig.creds, token: 'x' } });

    expect(misspelt.success).toBe(false);
    expect(JSON.stringify(misspelt.error?.issues)).toContain('region');
    expect(extraCreds.success).toBe(false);
    expect(JSON.stringify(extraCreds.error?.issues)).toContain('token');
    expect(
      runpodConfigModels.backendConfig.safeParse({ type: 'runpod', creds: apiKeyConfig.creds }).success,
    ).toBe(false);
  });

  it('round-trips through the stored record, keeping creds out of the config', async () => {
    const configurator = plugin.createConfigurator();

    const stored = record(await configurator.createBackend('main', apiKeyConfig));

    expect(JSON.parse(stored.config)).toEqual({
      type: 'runpod',
      regions: ['US-TX-3', 'US'],
      community_cloud: true,
    });
    expect(JSON.parse(stored.auth)).toEqual(apiKeyConfig.creds);
    expect(configurator.getBackendConfigWithCreds(stored)).toEqual(apiKeyConfig);
    expect(configurator.getBackendConfigWithoutCreds(stored)).toEqual({
      type: 'runpod',
      regions: ['US-TX-3', 'US'],
      community_cloud: true,
    });
    expect(runpodConfigModels.configFromRecord(stored)).toEqual(apiKeyConfig);
  });
});

describe('runpod config checks', () => {
  it('names the field the schema rejects', () => {
    const bad: RunpodBackendConfigWithCreds = { ...apiKeyConfig, regions: [] };

    const failure = catchError(() => parseRunpodBackendConfig(bad));

    expect(ServerClientError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ fields: [['regions']] });
    expect(
      catchError(() => parseRunpodBackendConfig({ type: 'runpod', creds: { type: 'api_key' } })),
    ).toMatchObject({
      fields: [['creds', 'api_key']],
    });
  });

  it("refuses an endpoint other than RunPod's from the API unless custom endpoints are allowed", async () => {
    const fromApi = { origin: 'api', defaultCredsEnabled: false, customEndpointsAllowed: false } as const;
    const failure = await new RunpodConfigurator()
      .validateConfig({ ...apiKeyConfig, endpoint_url: 'http://127.0.0.1:1/graphql' }, fromApi)
      .catch((error: unknown) => error);

    expect(ServerClientError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ fields: [['endpoint_url']] });
  });

  it('reports refused credentials on the field the user must fix', () => {
    const error = invalidCredentials(apiKeyConfig.creds);

    expect(InvalidCredentialsError.isInstance(error)).toBe(true);
    expect(error.fields).toEqual([['creds', 'api_key']]);
  });
});
