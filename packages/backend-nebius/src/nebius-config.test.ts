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
    expect(schema.safeParse({ type: 'nebius', creds: { type: 'service_account' } }).success).toBe(false);
    expect(schema.safeParse({ type: 'nebius' }).success).toBe(false);
    const misspelt = schema.safeParse({ ...config, region: ['eu-north1'] });
    expect(misspelt.success).toBe(false);
    expect(JSON.stringify(misspelt.error?.issues)).toContain('region');
    // dstack's credentials-file `filename` is not taken: refused by name.
    const filename = schema.safeParse({ ...config, creds: { ...creds, filename: '/k.json' } });
    expect(JSON.stringify(filename.error?.issues)).toContain('filename');
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

describe('nebius config checks', () => {
  it('names the field it refuses', () => {
    const cases: Array<[unknown, string[]]> = [
      [{ ...config, regions: [] }, ['regions']],
      [{ ...config, tags: { Team: 'ml' } }, ['tags', 'Team']],
      [{ ...config, fabrics: ['fabric-99'] }, ['fabrics']],
      [{ ...config, creds: { ...creds, private_key_content: undefined } }, ['creds', 'private_key_content']],
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
