import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertBackendPlugin, assertComputeMatchesPlugin, ServerClientError } from '@dstack/core';
import { afterEach, describe, expect, it } from 'vitest';
import packageJson from '../package.json' with { type: 'json' };
import plugin, { type LocalBackendConfigWithCreds, LocalCompute, VERSION } from './index.js';

const record = (stored: { config: string; auth: string }) => ({ ...stored, projectId: 'p', backendId: 'b' });

const temporaryDirectories: string[] = [];
afterEach(async () => {
  await Promise.all(temporaryDirectories.splice(0).map((path) => rm(path, { recursive: true, force: true })));
});

describe('the local backend plugin', () => {
  it('is a valid v1 descriptor', () => {
    const loaded = assertBackendPlugin(plugin, '@dstack/backend-local');

    expect(loaded).toMatchObject({
      type: 'local',
      computeKind: 'vm',
      capabilities: ['create-instance', 'multinode', 'volumes'],
      provisioningTimeoutSeconds: 60,
    });
    expect(VERSION).toBe(packageJson.version);
  });

  it('accepts config.yml entries without creds', () => {
    const schema = plugin.configSchemas.backendConfigWithCreds;

    expect(schema.parse({ type: 'local' })).toEqual({ type: 'local', creds: { type: 'none' } });
    expect(schema.parse({ type: 'local', runtime: 'docker', creds: {} })).toEqual({
      type: 'local',
      runtime: 'docker',
      creds: { type: 'none' },
    });
    expect(schema.safeParse({ type: 'local', runtime: 'vm' }).success).toBe(false);
    expect(schema.safeParse({ type: 'local', gpus: 1 }).success).toBe(false);
  });
});

describe('LocalConfigurator', () => {
  it('rejects an unknown runtime, naming the field', async () => {
    const configurator = plugin.createConfigurator();
    const bad = { type: 'local', runtime: 'vm' } as unknown as LocalBackendConfigWithCreds;

    const failure = await configurator
      .validateConfig(bad, {
        origin: 'server_config',
        defaultCredsEnabled: true,
        customEndpointsAllowed: true,
      })
      .catch((error: unknown) => error);

    expect(ServerClientError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ fields: [['runtime']] });
    expect((failure as Error).message).toMatch(/runtime must be one of process, docker, got "vm"/);
  });

  it('stores the config with the default runtime and builds the compute from it', async () => {
    const instancesDir = await mkdtemp(join(tmpdir(), 'dstack-local-'));
    temporaryDirectories.push(instancesDir);
    const configurator = plugin.createConfigurator();
    const config = plugin.configSchemas.backendConfigWithCreds.parse({
      type: 'local',
      instances_dir: instancesDir,
    }) as LocalBackendConfigWithCreds;
    await configurator.validateConfig(config, {
      origin: 'server_config',
      defaultCredsEnabled: false,
      customEndpointsAllowed: true,
    });

    const stored = record(await configurator.createBackend('main', config));
    const compute = await configurator.getCompute(stored);

    expect(JSON.parse(stored.config)).toEqual({
      type: 'local',
      runtime: 'process',
      instances_dir: instancesDir,
    });
    expect(configurator.getBackendConfigWithoutCreds(stored)).toEqual({
      type: 'local',
      runtime: 'process',
      instances_dir: instancesDir,
    });
    expect(compute).toBeInstanceOf(LocalCompute);
    expect(compute).toMatchObject({ runtime: 'process', instancesDir });
    assertComputeMatchesPlugin(plugin, compute);
  });
});
