import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidCredentialsError, ServerClientError } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import plugin, { type NebiusBackendConfigWithCreds } from './index.js';
import { nebiusConfigModels } from './nebius-config.js';
import { invalidCredentials, parseNebiusBackendConfig } from './nebius-configurator.js';

const creds = {
  type: 'service_account',
  service_account_id: 'serviceaccount-e00abc',
  public_key_id: 'publickey-e00abc',
  private_key_content: '-----BEGIN PRIVATE KEY-----\nMII…\n-----END PRIVATE KEY-----\n',
} as const;
const config: NebiusBackendConfigWithCreds = {
  type: 'nebius',
  regions: ['eu-north1'],
  projects: ['project-e00abc'],
  fabrics: ['fabric-2'],
  tags: { team: 'ml' },
  creds,
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

describe('nebius config models', () => {
  it("takes dstack's fields and service_account creds, and nothing else", () => {
    const schema = nebiusConfigModels.backendConfigWithCreds;

    expect(schema.parse(config)).toEqual(config);
    expect(schema.safeParse({ type: 'nebius', creds: { type: 'api_key', api_key: 'x' } }).success).toBe(
      false,
    );
    // Without a credentials file, the account and key ID are required (named by the config check below).
    expect(
      catchError(() => parseNebiusBackendConfig({ type: 'nebius', creds: { type: 'service_account' } })),
    ).toMatchObject({ fields: [['creds', 'service_account_id']] });
    expect(schema.safeParse({ type: 'nebius' }).success).toBe(false);
    const misspelt = schema.safeParse({ ...config, region: ['eu-north1'] });
    expect(misspelt.success).toBe(false);
    expect(JSON.stringify(misspelt.error?.issues)).toContain('region');
    const extra = schema.safeParse({ ...config, creds: { ...creds, key_id: 'x' } });
    expect(JSON.stringify(extra.error?.issues)).toContain('key_id');
  });

  it('round-trips through the stored record, keeping creds out of the config', async () => {
    const configurator = plugin.createConfigurator();

    const stored = record(await configurator.createBackend('main', config));

    const { creds: _creds, ...withoutCreds } = config;
    expect(JSON.parse(stored.config)).toEqual(withoutCreds);
    expect(JSON.parse(stored.auth)).toEqual(creds);
    expect(configurator.getBackendConfigWithCreds(stored)).toEqual(config);
    expect(configurator.getBackendConfigWithoutCreds(stored)).toEqual(withoutCreds);
  });

  it('stores a private key named by private_key_file as its content', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'nebius-key-')), 'key.pem');
    writeFileSync(file, creds.private_key_content);
    const fromFile = {
      ...config,
      creds: { ...creds, private_key_content: undefined, private_key_file: file },
    };

    const stored = record(await plugin.createConfigurator().createBackend('main', fromFile));

    expect(JSON.parse(stored.auth)).toMatchObject({
      private_key_content: creds.private_key_content,
      private_key_file: file,
    });
    await expect(
      plugin.createConfigurator().createBackend('main', {
        ...fromFile,
        creds: { ...fromFile.creds, private_key_file: `${file}.missing` },
      }),
    ).rejects.toMatchObject({ fields: [['creds', 'private_key_file']] });
  });
});

describe('a Nebius credentials file (creds.filename)', () => {
  const write = (content: unknown) => {
    const file = join(mkdtempSync(join(tmpdir(), 'nebius-credentials-')), 'credentials.json');
    writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
    return file;
  };
  const subject = {
    alg: 'RS256',
    'private-key': creds.private_key_content,
    kid: 'publickey-e00file',
    iss: 'serviceaccount-e00file',
    sub: 'serviceaccount-e00file',
  };

  it("gives the account, key ID and key, stored as they are (dstack's fill_data)", async () => {
    const filename = write({ 'subject-credentials': subject });
    const stored = record(
      await plugin
        .createConfigurator()
        .createBackend('main', { type: 'nebius', creds: { type: 'service_account', filename } }),
    );
    expect(JSON.parse(stored.auth)).toEqual({
      type: 'service_account',
      filename,
      service_account_id: 'serviceaccount-e00file',
      public_key_id: 'publickey-e00file',
      private_key_content: creds.private_key_content,
    });
  });

  it('is refused naming creds.filename when missing or not a credentials file', async () => {
    const create = (filename: string) =>
      plugin
        .createConfigurator()
        .createBackend('main', { type: 'nebius', creds: { type: 'service_account', filename } })
        .catch((error: unknown) => error);
    for (const filename of [
      '/nonexistent/credentials.json',
      write('not json'),
      write({ 'subject-credentials': { ...subject, alg: 'ES256' } }),
      write({ 'subject-credentials': { ...subject, iss: 'someone-else' } }),
      write({ 'subject-credentials': { ...subject, kid: undefined } }),
    ]) {
      const failure = await create(filename);
      expect(ServerClientError.isInstance(failure)).toBe(true);
      expect(failure).toMatchObject({ fields: [['creds', 'filename']] });
    }
  });
});

describe('nebius config checks', () => {
  it('names the field it refuses', () => {
    const cases: Array<[unknown, string[]]> = [
      [{ ...config, regions: [] }, ['regions']],
      [{ ...config, tags: { Team: 'ml' } }, ['tags', 'Team']],
      [{ ...config, fabrics: ['fabric-99'] }, ['fabrics']],
      [{ ...config, creds: { ...creds, private_key_content: undefined } }, ['creds', 'private_key_content']],
      [{ ...config, creds: { ...creds, service_account_id: undefined } }, ['creds', 'service_account_id']],
    ];
    for (const [bad, field] of cases) {
      const failure = catchError(() => parseNebiusBackendConfig(bad));
      expect(ServerClientError.isInstance(failure)).toBe(true);
      expect(failure).toMatchObject({ fields: [field] });
    }
  });

  it('reports refused credentials on creds, as dstack', () => {
    const error = invalidCredentials(creds, new Error('UNAUTHENTICATED'));

    expect(InvalidCredentialsError.isInstance(error)).toBe(true);
    expect(error.fields).toEqual([['creds']]);
  });
});
