import { generateEd25519KeyPair, InvalidCredentialsError, ServerClientError } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import plugin, { type SlurmBackendConfigWithCreds } from './index.js';
import { slurmConfigModels } from './slurm-config.js';
import { parseSlurmBackendConfig } from './slurm-configurator.js';

const config: SlurmBackendConfigWithCreds = {
  type: 'slurm',
  clusters: [
    {
      name: 'main',
      hostname: 'login.example.org',
      port: 2222,
      user: 'alice',
      private_key: { content: 'KEY-A' },
      gpu_partitions: [{ gpu: 'A100:80GB', partitions: ['gpu'] }],
      cpu_partitions: ['cpu'],
    },
    { name: 'second', hostname: '10.0.0.2', user: 'bob', private_key: { content: 'KEY-B' } },
  ],
};

const record = (stored: { config: string; auth: string }) => ({ ...stored, projectId: 'p', backendId: 'b' });

describe('slurm config models', () => {
  it("are dstack's: clusters with their login node and key, no top-level creds", () => {
    expect(slurmConfigModels.backendConfigWithCreds.parse(config)).toEqual(config);
    const withCreds = slurmConfigModels.backendConfigWithCreds.safeParse({
      ...config,
      creds: { type: 'default' },
    });
    expect(withCreds.success).toBe(false);
  });

  it('refuse unknown fields and duplicate cluster names, naming the field', () => {
    const misspelt = (() => {
      try {
        return parseSlurmBackendConfig({ ...config, clusters: [{ ...config.clusters[0], hostnme: 'x' }] });
      } catch (error) {
        return error;
      }
    })();
    expect(ServerClientError.isInstance(misspelt)).toBe(true);
    expect((misspelt as Error).message).toContain('hostnme');

    const twice = slurmConfigModels.backendConfigWithCreds.safeParse({
      ...config,
      clusters: [config.clusters[0], { ...config.clusters[1], name: 'main' }],
    });
    expect(twice.error?.issues[0]?.path).toEqual(['clusters', 1, 'name']);
  });

  it('store the login nodes and keys apart from the config, and join them back in order', async () => {
    const stored = record(await plugin.createConfigurator().createBackend('main', config));

    expect(stored.config).not.toContain('KEY-A');
    expect(stored.config).not.toContain('login.example.org');
    expect(JSON.parse(stored.auth).clusters.map((each: { user: string }) => each.user)).toEqual([
      'alice',
      'bob',
    ]);
    const configurator = plugin.createConfigurator();
    expect(configurator.getBackendConfigWithCreds(stored)).toEqual(config);
    expect(configurator.getBackendConfigWithoutCreds(stored)).toEqual({
      type: 'slurm',
      clusters: [
        { name: 'main', gpu_partitions: config.clusters[0]?.gpu_partitions, cpu_partitions: ['cpu'] },
        { name: 'second' },
      ],
    });
  });

  it('name the cluster field validateConfig refuses before logging in', async () => {
    const configurator = plugin.createConfigurator();
    const options = { origin: 'api', defaultCredsEnabled: false, customEndpointsAllowed: false } as const;

    await expect(
      configurator.validateConfig(
        {
          ...config,
          clusters: [{ ...config.clusters[1], private_key: { path: '/etc/key' } }],
        } as SlurmBackendConfigWithCreds,
        options,
      ),
    ).rejects.toMatchObject({ fields: [['clusters', '0', 'private_key', 'path']] });
    await expect(
      configurator.validateConfig(
        {
          ...config,
          clusters: [{ ...config.clusters[1], gpu_partitions: [{ gpu: 'NoSuchGPU', partitions: ['g'] }] }],
        } as SlurmBackendConfigWithCreds,
        options,
      ),
    ).rejects.toMatchObject({ fields: [['clusters', '0', 'gpu_partitions']] });
    // Nothing listens on port 1: the login node cannot be reached, which is not a key problem.
    const unreachable = await configurator
      .validateConfig(
        {
          ...config,
          clusters: [
            {
              ...config.clusters[1],
              hostname: '127.0.0.1',
              port: 1,
              private_key: { content: generateEd25519KeyPair().privateKey },
            },
          ],
        } as SlurmBackendConfigWithCreds,
        options,
      )
      .catch((error: unknown) => error);
    expect(InvalidCredentialsError.isInstance(unreachable)).toBe(false);
    expect(unreachable).toMatchObject({ fields: [['clusters', '0', 'hostname']] });
  });
});
