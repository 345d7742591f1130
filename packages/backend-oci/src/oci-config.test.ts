import { ServerClientError } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import type { OciBackendConfigWithCreds } from './index.js';
import { ociConfigModels } from './oci-config.js';
import { OciConfigurator, parseOciBackendConfig } from './oci-configurator.js';

const clientConfig: OciBackendConfigWithCreds = {
  type: 'oci',
  regions: ['us-ashburn-1'],
  creds: {
    type: 'client',
    user: 'ocid1.user.oc1..u',
    tenancy: 'ocid1.tenancy.oc1..t',
    key_content: 'PEM',
    fingerprint: 'aa:bb',
    region: 'us-ashburn-1',
  },
};

function fieldsOf(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(ServerClientError);
    return (error as ServerClientError).fields;
  }
  throw new Error('expected an error');
}

describe('oci config models', () => {
  it("takes dstack's creds: client (API key) and default (a config file's profile, dstack's defaults)", () => {
    expect(parseOciBackendConfig(clientConfig)).toEqual(clientConfig);
    expect(parseOciBackendConfig({ type: 'oci', creds: { type: 'default' } }).creds).toEqual({
      type: 'default',
      file: '~/.oci/config',
      profile: 'DEFAULT',
    });
  });

  it('names the bad field: unknown fields, a missing fingerprint, key_file with key_content or neither', () => {
    expect(fieldsOf(() => parseOciBackendConfig({ ...clientConfig, vpc_ids: {} }))).toEqual([['vpc_ids']]);
    const { fingerprint: _fingerprint, ...noFingerprint } = clientConfig.creds as Record<string, unknown>;
    expect(fieldsOf(() => parseOciBackendConfig({ ...clientConfig, creds: noFingerprint }))).toEqual([
      ['creds', 'fingerprint'],
    ]);
    expect(
      fieldsOf(() =>
        parseOciBackendConfig({ ...clientConfig, creds: { ...clientConfig.creds, key_file: '/k.pem' } }),
      ),
    ).toEqual([['creds', 'key_content']]);
    expect(
      fieldsOf(() =>
        parseOciBackendConfig({ ...clientConfig, creds: { ...clientConfig.creds, key_content: null } }),
      ),
    ).toEqual([['creds', 'key_content']]);
  });

  it('refuses from the API what only the server config may set: a custom endpoint, a key file, default creds', async () => {
    const configurator = new OciConfigurator();
    const api = { origin: 'api', defaultCredsEnabled: false, customEndpointsAllowed: false } as const;
    await expect(
      configurator.validateConfig({ ...clientConfig, endpoint_url: 'http://127.0.0.1:1' }, api),
    ).rejects.toMatchObject({
      fields: [['endpoint_url']],
    });
    await expect(
      configurator.validateConfig(
        { type: 'oci', creds: { type: 'default', file: '~/.oci/config', profile: 'DEFAULT' } },
        api,
      ),
    ).rejects.toMatchObject({
      fields: [['creds', 'type']],
    });
  });

  it('keeps subnet_ids_per_region in the stored config only', () => {
    const stored = {
      type: 'oci' as const,
      regions: ['us-ashburn-1'],
      compartment_id: 'c',
      subnet_ids_per_region: { 'us-ashburn-1': 's' },
    };
    const record = {
      ...ociConfigModels.toRecord(stored, clientConfig.creds),
      projectId: 'p',
      backendId: 'b',
    };
    expect(ociConfigModels.configFromRecord(record).subnet_ids_per_region).toEqual({ 'us-ashburn-1': 's' });
    expect(ociConfigModels.configWithoutCredsFromRecord(record)).not.toHaveProperty('subnet_ids_per_region');
  });
});
