/** The CLI sends the content of every identity_file of an SSH fleet, as dstack's does. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FleetConfiguration } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withSshKeyContents } from './read-ssh-keys.js';

describe('withSshKeyContents', () => {
  let directory: string;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'dstack-cli-keys-'));
    await writeFile(join(directory, 'fleet_key'), 'FLEET PRIVATE\n');
    await writeFile(join(directory, 'fleet_key.pub'), 'ssh-ed25519 AAAA fleet\n');
    await writeFile(join(directory, 'host_key'), 'HOST PRIVATE\n');
    await writeFile(join(directory, 'proxy_key'), 'PROXY PRIVATE\n');
    await writeFile(join(directory, 'host_proxy_key'), 'HOST PROXY PRIVATE\n');
  });

  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  function fleet(sshConfig: FleetConfiguration['ssh_config']): FleetConfiguration {
    return { type: 'fleet', blocks: 1, env: {}, ssh_config: sshConfig } as FleetConfiguration;
  }

  it('reads the fleet key and each host key', async () => {
    const configuration = await withSshKeyContents(
      fleet({
        user: 'ubuntu',
        identity_file: join(directory, 'fleet_key'),
        hosts: ['a', { hostname: 'b', identity_file: join(directory, 'host_key') }],
      }),
    );
    expect(configuration.ssh_config?.ssh_key).toEqual({
      private: 'FLEET PRIVATE\n',
      public: 'ssh-ed25519 AAAA fleet',
    });
    expect(configuration.ssh_config?.hosts[1]).toMatchObject({ ssh_key: { private: 'HOST PRIVATE\n' } });
    expect(configuration.ssh_config?.hosts[0]).toBe('a');
  });

  it('reads the proxy_jump keys, fleet-wide and per host', async () => {
    const configuration = await withSshKeyContents(
      fleet({
        user: 'ubuntu',
        proxy_jump: { hostname: 'bastion', user: 'me', identity_file: join(directory, 'proxy_key') },
        hosts: [
          'a',
          {
            hostname: 'b',
            proxy_jump: { hostname: 'other', user: 'you', identity_file: join(directory, 'host_proxy_key') },
          },
        ],
      }),
    );
    expect(configuration.ssh_config?.proxy_jump).toEqual({
      hostname: 'bastion',
      user: 'me',
      identity_file: join(directory, 'proxy_key'),
      ssh_key: { private: 'PROXY PRIVATE\n' },
    });
    expect(configuration.ssh_config?.hosts[1]).toMatchObject({
      proxy_jump: { hostname: 'other', ssh_key: { private: 'HOST PROXY PRIVATE\n' } },
    });
    expect(configuration.ssh_config?.hosts[1]).not.toHaveProperty('ssh_key');
  });

  it('names the field whose file cannot be read', async () => {
    await expect(
      withSshKeyContents(
        fleet({ user: 'u', hosts: [{ hostname: 'h', identity_file: join(directory, 'missing') }] }),
      ),
    ).rejects.toThrow(/^ssh_config\.hosts\[0\]\.identity_file: cannot read/);
  });

  it("names the proxy_jump's identity_file when it cannot be read", async () => {
    const missing = { hostname: 'p', user: 'u', identity_file: join(directory, 'missing') };
    await expect(
      withSshKeyContents(fleet({ user: 'u', hosts: ['a', { hostname: 'h', proxy_jump: missing }] })),
    ).rejects.toThrow(/^ssh_config\.hosts\[1\]\.proxy_jump\.identity_file: cannot read/);
    await expect(withSshKeyContents(fleet({ user: 'u', proxy_jump: missing, hosts: ['a'] }))).rejects.toThrow(
      /^ssh_config\.proxy_jump\.identity_file: cannot read/,
    );
  });

  it('leaves a cloud fleet alone', async () => {
    const cloud = { type: 'fleet', blocks: 1, env: {} } as unknown as FleetConfiguration;
    expect(await withSshKeyContents(cloud)).toBe(cloud);
  });
});
