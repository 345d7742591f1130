import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultInstancesDir, localConfigModels, resolveInstancesDir } from './local-config.js';

const record = (stored: { config: string; auth: string }) => ({ ...stored, projectId: 'p', backendId: 'b' });

describe('local config models', () => {
  it('accepts each documented field and rejects unknown ones, naming them', () => {
    const schema = localConfigModels.backendConfigWithCreds;

    expect(schema.parse({ type: 'local', runtime: 'docker', instances_dir: '/srv/instances' })).toEqual({
      type: 'local',
      runtime: 'docker',
      instances_dir: '/srv/instances',
      creds: { type: 'none' },
    });
    const unknown = schema.safeParse({ type: 'local', instance_dir: '/srv/instances' });
    expect(unknown.success).toBe(false);
    expect(JSON.stringify(unknown.error?.issues)).toContain('instance_dir');
    expect(schema.safeParse({ type: 'local', runtime: 'vm' }).success).toBe(false);
    expect(schema.safeParse({ type: 'local', instances_dir: '' }).success).toBe(false);
    expect(
      localConfigModels.backendConfig.safeParse({ type: 'local', creds: { type: 'none' } }).success,
    ).toBe(false);
  });

  it("has one creds type, 'none', which absent or empty creds become", () => {
    const schema = localConfigModels.backendConfigWithCreds;

    expect(schema.parse({ type: 'local' }).creds).toEqual({ type: 'none' });
    expect(schema.parse({ type: 'local', creds: {} }).creds).toEqual({ type: 'none' });
    expect(schema.parse({ type: 'local', creds: { type: 'none' } }).creds).toEqual({ type: 'none' });
    expect(schema.safeParse({ type: 'local', creds: { type: 'api_key', api_key: 'x' } }).success).toBe(false);
    expect(schema.safeParse({ type: 'local', creds: { type: 'none', token: 'x' } }).success).toBe(false);
  });

  it('round-trips through a stored record, creds apart', () => {
    const stored = record(
      localConfigModels.toRecord({ type: 'local', runtime: 'process' }, { type: 'none' }),
    );

    expect(JSON.parse(stored.config)).toEqual({ type: 'local', runtime: 'process' });
    expect(JSON.parse(stored.auth)).toEqual({ type: 'none' });
    expect(localConfigModels.configFromRecord(stored)).toEqual({
      type: 'local',
      runtime: 'process',
      creds: { type: 'none' },
    });
    expect(localConfigModels.configWithoutCredsFromRecord(stored)).toEqual({
      type: 'local',
      runtime: 'process',
    });
  });

  it('reads records written by other versions, dropping fields it does not know', () => {
    const stored = record({
      config: JSON.stringify({ type: 'local', runtime: 'docker', future: 1 }),
      auth: JSON.stringify({ type: 'none' }),
    });

    expect(localConfigModels.configFromRecord(stored)).toEqual({
      type: 'local',
      runtime: 'docker',
      creds: { type: 'none' },
    });
  });
});

describe('instances_dir', () => {
  it('defaults under DSTACK_SERVER_DIR, else ~/.dstack/server', () => {
    expect(defaultInstancesDir({ DSTACK_SERVER_DIR: '/srv/dstack' })).toBe('/srv/dstack/local-instances');
    expect(defaultInstancesDir({})).toBe(join(homedir(), '.dstack', 'server', 'local-instances'));
  });

  it('expands ~ and resolves relative paths from the working directory', () => {
    expect(resolveInstancesDir('~/instances')).toBe(join(homedir(), 'instances'));
    expect(resolveInstancesDir('instances')).toBe(resolve('instances'));
    expect(resolveInstancesDir('/abs/instances')).toBe('/abs/instances');
  });
});
