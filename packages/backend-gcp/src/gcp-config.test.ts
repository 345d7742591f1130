import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidCredentialsError, ServerClientError } from '@dstack/core';
import { afterAll, describe, expect, it } from 'vitest';
import { gcpConfigModels } from './gcp-config.js';
import { invalidCredentials, parseGcpBackendConfig, refuseDisabledDefaultCreds } from './gcp-configurator.js';
import { serviceAccountKeyOfCreds } from './gcp-credentials.js';
import plugin, { type GcpBackendConfigWithCreds } from './index.js';

const key = {
  type: 'service_account',
  project_id: 'my-project',
  private_key_id: 'abc',
  private_key: '-----BEGIN PRIVATE KEY-----\nMII\n-----END PRIVATE KEY-----\n',
  client_email: 'dstack@my-project.iam.gserviceaccount.com',
  token_uri: 'https://oauth2.googleapis.com/token',
};

const keyConfig: GcpBackendConfigWithCreds = {
  type: 'gcp',
  project_id: 'my-project',
  regions: ['us-central1', 'europe-west4'],
  creds: { type: 'service_account', data: JSON.stringify(key) },
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
const temp = mkdtempSync(join(tmpdir(), 'gcp-config-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

describe('gcp config models', () => {
  it('accepts each kind of creds and nothing else', () => {
    const schema = gcpConfigModels.backendConfigWithCreds;

    expect(schema.parse(keyConfig)).toEqual(keyConfig);
    expect(schema.parse({ type: 'gcp', project_id: 'p', creds: { type: 'default' } })).toEqual({
      type: 'gcp',
      project_id: 'p',
      creds: { type: 'default' },
    });
    expect(
      schema.safeParse({ type: 'gcp', project_id: 'p', creds: { type: 'api_key', api_key: 'x' } }).success,
    ).toBe(false);
    expect(schema.safeParse({ type: 'gcp', creds: { type: 'default' } }).success).toBe(false);
    expect(schema.safeParse({ type: 'gcp', project_id: 'p' }).success).toBe(false);
  });

  it('rejects unknown fields, naming them', () => {
    const schema = gcpConfigModels.backendConfigWithCreds;

    const misspelt = schema.safeParse({ ...keyConfig, region: ['us-central1'] });
    const extraCreds = schema.safeParse({ ...keyConfig, creds: { ...keyConfig.creds, token: 'x' } });

    expect(misspelt.success).toBe(false);
    expect(JSON.stringify(misspelt.error?.issues)).toContain('region');
    expect(extraCreds.success).toBe(false);
    expect(JSON.stringify(extraCreds.error?.issues)).toContain('token');
  });

  it('round-trips through the stored record, keeping creds out of the config', async () => {
    const configurator = plugin.createConfigurator();

    const stored = record(await configurator.createBackend('main', keyConfig));

    expect(JSON.parse(stored.config)).toEqual({
      type: 'gcp',
      project_id: 'my-project',
      regions: ['us-central1', 'europe-west4'],
    });
    expect(JSON.parse(stored.auth)).toEqual(keyConfig.creds);
    expect(configurator.getBackendConfigWithCreds(stored)).toEqual(keyConfig);
    expect(gcpConfigModels.configFromRecord(stored)).toEqual(keyConfig);
  });

  it('stores a key given by filename as its data', async () => {
    const file = join(temp, 'key.json');
    writeFileSync(file, JSON.stringify(key));
    const stored = record(
      await plugin
        .createConfigurator()
        .createBackend('main', { ...keyConfig, creds: { type: 'service_account', filename: file } }),
    );

    expect(JSON.parse(stored.auth)).toEqual({
      type: 'service_account',
      filename: file,
      data: JSON.stringify(key),
    });
  });
});

describe('gcp config checks', () => {
  it('names the field the schema rejects', () => {
    const failure = catchError(() => parseGcpBackendConfig({ ...keyConfig, regions: [] }));

    expect(ServerClientError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ fields: [['regions']] });
    expect(
      catchError(() => parseGcpBackendConfig({ type: 'gcp', creds: { type: 'default' } })),
    ).toMatchObject({
      fields: [['project_id']],
    });
  });

  it('refuses, by name, the fields it cannot honour', () => {
    const cases: [Partial<GcpBackendConfigWithCreds>, string[]][] = [
      [{ vpc_project_id: 'host-project' }, ['vpc_project_id']],
      [{ extra_vpcs: ['gpu-net-1'] }, ['extra_vpcs']],
      [{ nat_check: true }, ['nat_check']],
      [{ public_ips: false }, ['nat_check']],
      [{ tags: { Team: 'ml' } }, ['tags', 'Team']],
      [{ creds: { type: 'service_account' } }, ['creds', 'data']],
    ];
    for (const [extra, field] of cases) {
      const failure = catchError(() => parseGcpBackendConfig({ ...keyConfig, ...extra }));
      expect(ServerClientError.isInstance(failure), JSON.stringify(extra)).toBe(true);
      expect(failure).toMatchObject({ fields: [field] });
    }
    expect(() => parseGcpBackendConfig({ ...keyConfig, public_ips: false, nat_check: false })).not.toThrow();
    expect(() => parseGcpBackendConfig({ ...keyConfig, tags: { team: 'ml-1' } })).not.toThrow();
  });

  it("names the creds field and the key's bad field when the key file is bad", () => {
    const cases: [GcpBackendConfigWithCreds['creds'], string[], string][] = [
      [{ type: 'service_account', data: 'not json' }, ['creds', 'data'], 'creds.data: is not a JSON'],
      [
        { type: 'service_account', data: JSON.stringify({ ...key, type: 'authorized_user' }) },
        ['creds', 'data'],
        'creds.data: field "type" ',
      ],
      [
        { type: 'service_account', data: JSON.stringify({ ...key, private_key: undefined }) },
        ['creds', 'data'],
        'creds.data: field "private_key" is missing',
      ],
      [
        { type: 'service_account', filename: join(temp, 'missing.json') },
        ['creds', 'filename'],
        `creds.filename: cannot read ${join(temp, 'missing.json')}`,
      ],
    ];
    for (const [creds, field, message] of cases) {
      const failure = catchError(() => serviceAccountKeyOfCreds(creds as never));
      expect(ServerClientError.isInstance(failure), JSON.stringify(creds)).toBe(true);
      expect(failure).toMatchObject({ fields: [field] });
      expect((failure as Error).message).toContain(`Invalid gcp backend config: ${message}`);
    }
    const file = join(temp, 'good-key.json');
    writeFileSync(file, JSON.stringify(key));
    expect(serviceAccountKeyOfCreds({ type: 'service_account', filename: file })).toMatchObject({
      client_email: key.client_email,
      token_uri: key.token_uri,
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
    expect(() => refuseDisabledDefaultCreds(keyConfig.creds, fromFile)).not.toThrow();
  });

  it('never quotes the key text in an error', () => {
    const secret = 'root:x:0:0:SECRET-LINE';
    const failure = catchError(() => serviceAccountKeyOfCreds({ type: 'service_account', data: secret }));
    expect(failure).toMatchObject({ fields: [['creds', 'data']] });
    expect((failure as Error).message).not.toContain('SECRET');
    expect((failure as Error).message).not.toContain('root');
  });

  it('reports refused credentials on the field the user must fix', () => {
    const error = invalidCredentials(keyConfig.creds);

    expect(InvalidCredentialsError.isInstance(error)).toBe(true);
    expect(error.fields).toEqual([['creds', 'data']]);
    expect(invalidCredentials({ type: 'service_account', filename: '/k.json' }).fields).toEqual([
      ['creds', 'filename'],
    ]);
    expect(invalidCredentials({ type: 'default' }).fields).toEqual([['creds', 'type']]);
  });
});
