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

  it('rejects a host listed twice and proxies', () => {
    expect(() =>
      sshFleetHostsOf({ user: 'u', ssh_key: KEY, hosts: ['h', { hostname: 'h', port: 22 }] }),
    ).toThrow(/^ssh_config\.hosts\[1\]: u@h:22 is listed twice/);
    expect(() =>
      sshFleetHostsOf({
        user: 'u',
        ssh_key: KEY,
        proxy_jump: { hostname: 'p', user: 'u', identity_file: 'k' },
        hosts: ['h'],
      }),
    ).toThrow(/^ssh_config\.proxy_jump: SSH fleets behind a proxy are not supported yet/);
  });
});

describe('withoutKeyContents', () => {
  it('drops every ssh_key and keeps the rest', () => {
    expect(
      withoutKeyContents({
        user: 'u',
        identity_file: 'k',
        ssh_key: KEY,
        hosts: ['a', { hostname: 'b', identity_file: 'o', ssh_key: KEY }],
      }),
    ).toEqual({ user: 'u', identity_file: 'k', hosts: ['a', { hostname: 'b', identity_file: 'o' }] });
  });
});
