import { InvalidCredentialsError, ServerClientError } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import plugin, { type VastAiBackendConfigWithCreds } from './index.js';
import { vastAiConfigModels } from './vastai-config.js';
import { invalidCredentials, parseVastAiBackendConfig, VastAiConfigurator } from './vastai-configurator.js';

const apiKeyConfig: VastAiBackendConfigWithCreds = {
  type: 'vastai',
  regions: ['us', 'cz-czechia'],
  community_cloud: false,
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

describe('vastai config models', () => {
  it('accepts each kind of creds and nothing else', () => {
    const schema = vastAiConfigModels.backendConfigWithCreds;

    expect(schema.parse(apiKeyConfig)).toEqual(apiKeyConfig);
    // Vast.ai has no ambient credentials: an API key only, as dstack.
    expect(schema.safeParse({ type: 'vastai', creds: { type: 'default' } }).success).toBe(false);
    expect(schema.safeParse({ ...apiKeyConfig, endpoint_url: 'not a url' }).success).toBe(false);
    expect(schema.safeParse({ type: 'vastai', creds: { type: 'password', password: 'x' } }).success).toBe(
      false,
    );
    expect(schema.safeParse({ type: 'vastai', creds: { type: 'api_key' } }).success).toBe(false);
    expect(schema.safeParse({ type: 'vastai' }).success).toBe(false);
  });

  it('rejects unknown fields, naming them', () => {
    const schema = vastAiConfigModels.backendConfigWithCreds;

    const misspelt = schema.safeParse({ ...apiKeyConfig, region: ['region-a'] });
    const extraCreds = schema.safeParse({ ...apiKeyConfig, creds: { ...apiKeyConfig.creds, token: 'x' } });

    expect(misspelt.success).toBe(false);
    expect(JSON.stringify(misspelt.error?.issues)).toContain('region');
    expect(extraCreds.success).toBe(false);
    expect(JSON.stringify(extraCreds.error?.issues)).toContain('token');
    expect(
      vastAiConfigModels.backendConfig.safeParse({ type: 'vastai', creds: apiKeyConfig.creds }).success,
    ).toBe(false);
  });

  it('round-trips through the stored record, keeping creds out of the config', async () => {
    const configurator = plugin.createConfigurator();

    const stored = record(await configurator.createBackend('main', apiKeyConfig));

    expect(JSON.parse(stored.config)).toEqual({
      type: 'vastai',
      regions: ['us', 'cz-czechia'],
      community_cloud: false,
    });
    expect(JSON.parse(stored.auth)).toEqual(apiKeyConfig.creds);
    expect(configurator.getBackendConfigWithCreds(stored)).toEqual(apiKeyConfig);
    expect(configurator.getBackendConfigWithoutCreds(stored)).toEqual({
      type: 'vastai',
      regions: ['us', 'cz-czechia'],
      community_cloud: false,
    });
    expect(vastAiConfigModels.configFromRecord(stored)).toEqual(apiKeyConfig);
  });
});

describe('vastai config checks', () => {
  it('names the field the schema rejects', () => {
    const bad: VastAiBackendConfigWithCreds = { ...apiKeyConfig, regions: [] };

    const failure = catchError(() => parseVastAiBackendConfig(bad));

    expect(ServerClientError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ fields: [['regions']] });
    expect(
      catchError(() => parseVastAiBackendConfig({ type: 'vastai', creds: { type: 'api_key' } })),
    ).toMatchObject({
      fields: [['creds', 'api_key']],
    });
  });

  it('reports refused credentials on the field the user must fix', () => {
    const error = invalidCredentials(apiKeyConfig.creds);

    expect(InvalidCredentialsError.isInstance(error)).toBe(true);
    expect(error.fields).toEqual([['creds', 'api_key']]);
  });

  it("refuses an endpoint_url other than Vast.ai's from the API unless custom endpoints are allowed", async () => {
    const fromApi = { origin: 'api', defaultCredsEnabled: false, customEndpointsAllowed: false } as const;
    // Port 9 (discard): were it called, the error would not name endpoint_url up front.
    const custom = { ...apiKeyConfig, endpoint_url: 'http://127.0.0.1:9' };
    const error = await new VastAiConfigurator().validateConfig(custom, fromApi).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(ServerClientError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ fields: [['endpoint_url']] });
    expect(String(error)).toContain('DSTACK_SERVER_ALLOW_CUSTOM_BACKEND_ENDPOINTS');
  });
});
