import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { BackendPluginError } from '../errors.js';
import { SampleConfigurator, sampleConfigModels } from './__fixtures__/sample-backend.js';
import { defineBackendConfigModels } from './config-models.js';

const userConfig = {
  type: 'sample' as const,
  regions: ['r1'],
  public_ips: false,
  creds: { type: 'api_key' as const, api_key: 'good' },
};

describe('defineBackendConfigModels', () => {
  it('builds the chain BackendConfig → WithCreds → Stored → Config', () => {
    expect(sampleConfigModels.backendConfig.parse({ type: 'sample' })).toEqual({
      type: 'sample',
      public_ips: true,
    });
    expect(sampleConfigModels.backendConfigWithCreds.parse(userConfig)).toEqual(userConfig);
    expect(
      sampleConfigModels.storedConfig.parse({ type: 'sample', regions: null, project_slug: 'main' }),
    ).toEqual({ type: 'sample', regions: null, public_ips: true, project_slug: 'main' });
    expect(
      sampleConfigModels.config.parse({ type: 'sample', project_slug: 'main', creds: { type: 'default' } }),
    ).toEqual({ type: 'sample', public_ips: true, project_slug: 'main', creds: { type: 'default' } });
  });

  it('rejects unknown fields in user input, in creds too', () => {
    const extraCreds = { ...userConfig, creds: { type: 'api_key', api_key: 'good', secret: 'x' } };
    const result = sampleConfigModels.backendConfigWithCreds.safeParse(extraCreds);
    expect(result.success).toBe(false);
    expect(JSON.stringify(result.error?.issues)).toContain('secret');
    expect(sampleConfigModels.backendConfig.safeParse({ type: 'sample', vpc: 'x' }).success).toBe(false);
    expect(sampleConfigModels.backendConfig.safeParse({ type: 'other' }).success).toBe(false);
    expect(sampleConfigModels.creds.safeParse({ type: 'password' }).success).toBe(false);
    expect(sampleConfigModels.creds.safeParse({ type: 'api_key' }).success).toBe(false);
  });

  it('splits and joins creds, and round-trips through a BackendRecord', () => {
    const { config, auth } = sampleConfigModels.splitCreds(userConfig);
    expect(config).toEqual({ type: 'sample', regions: ['r1'], public_ips: false });
    expect(auth).toEqual({ type: 'api_key', api_key: 'good' });
    const stored = { ...config, project_slug: 'main' };
    expect(sampleConfigModels.joinCreds(stored, auth)).toEqual({ ...stored, creds: auth });

    const record = sampleConfigModels.toRecord(stored, auth);
    expect(JSON.parse(record.auth)).toEqual(auth);
    expect(JSON.parse(record.config)).not.toHaveProperty('creds');
    expect(sampleConfigModels.configFromRecord(record)).toEqual({ ...stored, creds: auth });
    expect(sampleConfigModels.configWithCredsFromRecord(record)).toEqual(userConfig);
    expect(sampleConfigModels.configWithoutCredsFromRecord(record)).toEqual(config);
  });

  it('loads stored records with fields it does not know', () => {
    const record = {
      config: JSON.stringify({ type: 'sample', project_slug: 'p', removed_field: 1 }),
      auth: JSON.stringify({ type: 'api_key', api_key: 'k', legacy: true }),
    };
    expect(sampleConfigModels.configFromRecord(record)).toEqual({
      type: 'sample',
      public_ips: true,
      project_slug: 'p',
      creds: { type: 'api_key', api_key: 'k' },
    });
  });

  it('accepts creds as z.object and refuses reserved field names', () => {
    const models = defineBackendConfigModels({
      type: 'x',
      configFields: {},
      credsSchemas: { token: z.object({ token: z.string() }) },
    });
    expect(models.creds.parse({ type: 'token', token: 't' })).toEqual({ type: 'token', token: 't' });
    expect(() =>
      defineBackendConfigModels({ type: 'x', configFields: { creds: z.string() }, credsSchemas: { a: {} } }),
    ).toThrow(BackendPluginError);
    expect(() => defineBackendConfigModels({ type: 'x', configFields: {}, credsSchemas: {} })).toThrow(
      /at least one creds type/,
    );
  });
});

describe('a configurator built on the config models', () => {
  const configurator = new SampleConfigurator();
  const ids = { projectId: 'p1', backendId: 'b1' };

  it('names the bad creds field', async () => {
    const bad = sampleConfigModels.backendConfigWithCreds.parse({
      ...userConfig,
      creds: { type: 'api_key', api_key: 'bad' },
    });
    await expect(
      configurator.validateConfig(bad, {
        origin: 'server_config',
        defaultCredsEnabled: true,
        customEndpointsAllowed: true,
      }),
    ).rejects.toMatchObject({
      name: 'InvalidCredentialsError',
      fields: [['creds', 'api_key']],
    });
  });

  it('fills defaults in createBackend and reads them back', async () => {
    const record = await configurator.createBackend('main', { ...userConfig, regions: null });
    const stored = { ...record, ...ids };
    expect(configurator.getBackendConfigWithoutCreds(stored).regions).toEqual(['r1', 'r2']);
    expect(configurator.getBackendConfigWithCreds(stored).creds).toEqual(userConfig.creds);
    const compute = await configurator.getCompute(stored);
    expect(compute.config.project_slug).toBe('main');
  });
});

describe('defineBackendConfigModels without stored-only fields', () => {
  it('types the stored config as the user config (a record built from it type-checks)', () => {
    const models = defineBackendConfigModels({
      type: 'plain',
      configFields: { region: z.string().optional() },
      credsSchemas: { none: {} },
    });
    // Compile-time: before the fix, the stored config was `& Record<string, never>` and this failed.
    const stored: Parameters<typeof models.toRecord>[0] = { type: 'plain', region: 'r1' };
    const record = models.toRecord(stored, { type: 'none' });
    expect(models.configFromRecord(record)).toEqual({ type: 'plain', region: 'r1', creds: { type: 'none' } });
  });
});
