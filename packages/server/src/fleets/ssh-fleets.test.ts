/** How an SSH fleet's hosts get their user, port and key, and which field an error names. */
import type { SshConfig } from '@dstack/core';
import { describe, expect, it } from 'vitest';
import { sshFleetHostsOf, withoutKeyContents } from './ssh-fleets.js';

const KEY = { private: 'fleet-key' };

describe('sshFleetHostsOf', () => {
  it('takes the host values first, then the fleet values, then port 22', () => {
    const config: SshConfig = {
      user: 'ubuntu',
      ssh_key: KEY,
      hosts: [
        '10.0.0.1',
        { hostname: '10.0.0.2', port: 2222, user: 'admin', identity_file: 'k', ssh_key: { private: 'own' } },
      ],
    };
    const hosts = sshFleetHostsOf(config);
    expect(hosts.map((host) => host.address)).toEqual([
      { hostname: '10.0.0.1', port: 22, username: 'ubuntu', privateKey: 'fleet-key' },
      { hostname: '10.0.0.2', port: 2222, username: 'admin', privateKey: 'own' },
    ]);
    expect(hosts.map((host) => host.keyField)).toEqual([
      ['ssh_config', 'identity_file'],
      ['ssh_config', 'hosts', 1, 'identity_file'],
    ]);
  });

  it("keeps each host's internal_ip for the other nodes of a cluster (none: its hostname is used)", () => {
    const hosts = sshFleetHostsOf({
      user: 'u',
      ssh_key: KEY,
      hosts: [{ hostname: '203.0.113.1', internal_ip: '10.0.0.1' }, '203.0.113.2'],
    });
    expect(hosts.map((host) => host.internalIp)).toEqual(['10.0.0.1', null]);
  });

  it('names the missing user', () => {
    expect(() => sshFleetHostsOf({ ssh_key: KEY, hosts: ['h'] })).toThrow(
      /^ssh_config\.user: no user for host h/,
    );
  });

  it("names the host's identity_file when its key content is missing", () => {
    expect(() =>
      sshFleetHostsOf({ user: 'u', ssh_key: KEY, hosts: [{ hostname: 'h', identity_file: '~/.ssh/other' }] }),
    ).toThrow(/^ssh_config\.hosts\[0\]\.identity_file: no key content for host h/);
    expect(() => sshFleetHostsOf({ user: 'u', hosts: ['h'] })).toThrow(
      /^ssh_config\.identity_file: no key content/,
    );
  });

  it('rejects a host listed twice', () => {
    expect(() =>
      sshFleetHostsOf({ user: 'u', ssh_key: KEY, hosts: ['h', { hostname: 'h', port: 22 }] }),
    ).toThrow(/^ssh_config\.hosts\[1\]: u@h:22 is listed twice/);
  });

  it("gives every host the fleet's proxy_jump unless it has its own", () => {
    const hosts = sshFleetHostsOf({
      user: 'u',
      ssh_key: KEY,
      proxy_jump: {
        hostname: 'bastion',
        user: 'jump',
        identity_file: 'b',
        ssh_key: { private: 'bastion-key' },
      },
      hosts: [
        'h1',
        {
          hostname: 'h2',
          proxy_jump: {
            hostname: 'other',
            port: 2222,
            user: 'me',
            identity_file: 'o',
            ssh_key: { private: 'other-key' },
          },
        },
      ],
    });
    expect(hosts.map((host) => host.address.proxy)).toEqual([
      { hostname: 'bastion', port: 22, username: 'jump', privateKey: 'bastion-key' },
      { hostname: 'other', port: 2222, username: 'me', privateKey: 'other-key' },
    ]);
    expect(hosts.map((host) => host.proxyField)).toEqual([
      ['ssh_config', 'proxy_jump'],
      ['ssh_config', 'hosts', 1, 'proxy_jump'],
    ]);
    expect(sshFleetHostsOf({ user: 'u', ssh_key: KEY, hosts: ['h'] })[0]).toMatchObject({ proxyField: null });
    expect(sshFleetHostsOf({ user: 'u', ssh_key: KEY, hosts: ['h'] })[0]?.address).not.toHaveProperty(
      'proxy',
    );
  });

  it('tells the same address behind two proxies apart', () => {
    const proxy = (hostname: string) => ({ hostname, user: 'j', identity_file: 'k', ssh_key: KEY });
    expect(
      sshFleetHostsOf({
        user: 'u',
        ssh_key: KEY,
        proxy_jump: proxy('a'),
        hosts: ['10.0.0.1', { hostname: '10.0.0.1', proxy_jump: proxy('b') }],
      }),
    ).toHaveLength(2);
    expect(() =>
      sshFleetHostsOf({
        user: 'u',
        ssh_key: KEY,
        proxy_jump: proxy('a'),
        hosts: ['10.0.0.1', { hostname: '10.0.0.1', proxy_jump: proxy('a') }],
      }),
    ).toThrow(/^ssh_config\.hosts\[1\]: u@10\.0\.0\.1:22 via j@a:22 is listed twice/);
  });

  it("names the proxy's identity_file when its key content is missing", () => {
    const noKey = { hostname: 'p', user: 'j', identity_file: '~/.ssh/p' };
    expect(() => sshFleetHostsOf({ user: 'u', ssh_key: KEY, proxy_jump: noKey, hosts: ['h'] })).toThrow(
      /^ssh_config\.proxy_jump\.identity_file: no key content for the proxy p/,
    );
    expect(() =>
      sshFleetHostsOf({ user: 'u', ssh_key: KEY, hosts: ['a', { hostname: 'h', proxy_jump: noKey }] }),
    ).toThrow(/^ssh_config\.hosts\[1\]\.proxy_jump\.identity_file: no key content for the proxy p/);
  });
});

describe('sshFleetHostsOf blocks', () => {
  it("takes a host's blocks over the fleet's, and names the field each came from", () => {
    const hosts = sshFleetHostsOf(
      {
        user: 'u',
        ssh_key: KEY,
        hosts: ['a', { hostname: 'b', blocks: 2 }, { hostname: 'c', blocks: 'auto' }],
      },
      4,
    );
    expect(hosts.map((host) => [host.blocks, host.blocksField])).toEqual([
      [4, ['blocks']],
      [2, ['ssh_config', 'hosts', 1, 'blocks']],
      ['auto', ['ssh_config', 'hosts', 2, 'blocks']],
    ]);
    expect(sshFleetHostsOf({ user: 'u', ssh_key: KEY, hosts: ['a'] })[0]?.blocks).toBe(1);
  });
});

describe('withoutKeyContents', () => {
  it("drops every ssh_key, the proxies' too, and keeps the rest", () => {
    const proxy = { hostname: 'p', user: 'j', identity_file: 'pk' };
    expect(
      withoutKeyContents({
        user: 'u',
        identity_file: 'k',
        ssh_key: KEY,
        proxy_jump: { ...proxy, ssh_key: KEY },
        hosts: [
          'a',
          { hostname: 'b', identity_file: 'o', ssh_key: KEY, proxy_jump: { ...proxy, ssh_key: KEY } },
        ],
      }),
    ).toEqual({
      user: 'u',
      identity_file: 'k',
      proxy_jump: proxy,
      hosts: ['a', { hostname: 'b', identity_file: 'o', proxy_jump: proxy }],
    });
  });
});
