/**
 * SSH fleets: the server logs in to the hosts (and their `proxy_jump` hosts) but cannot read
 * the user's files, so the CLI reads each `identity_file` and sends its content as `ssh_key`,
 * as dstack's CLI does.
 */
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import type { FleetConfiguration } from '@dstack/core';
import { CommandError } from '../output/command-error.js';

type SshConfig = NonNullable<FleetConfiguration['ssh_config']>;
type SshKey = NonNullable<SshConfig['ssh_key']>;
type ProxyJump = NonNullable<SshConfig['proxy_jump']>;

/** `~/x` → `$HOME/x`; other paths resolve against the working directory, as in dstack. */
function expandPath(path: string): string {
  if (path === '~') return homedir();
  if (path.startsWith('~/')) return resolve(homedir(), path.slice(2));
  return resolve(path);
}

async function readSshKey(identityFile: string, field: string): Promise<SshKey> {
  const path = expandPath(identityFile);
  let privateKey: string;
  try {
    privateKey = await readFile(path, 'utf8');
  } catch (error) {
    throw new CommandError(`${field}: cannot read ${path}: ${(error as Error).message}`);
  }
  // The public half is optional: the server logs in with the private key alone.
  const publicKey = await readFile(`${path}.pub`, 'utf8').catch(() => undefined);
  return { private: privateKey, ...(publicKey ? { public: publicKey.trim() } : {}) };
}

/** The proxy with `ssh_key` read from its `identity_file`; `field` is where the proxy is, for errors. */
async function withProxyKey(proxy: ProxyJump | undefined, field: string): Promise<ProxyJump | undefined> {
  if (proxy === undefined) return undefined;
  return { ...proxy, ssh_key: await readSshKey(proxy.identity_file, `${field}.identity_file`) };
}

/**
 * The configuration with `ssh_key` set next to every `identity_file`: fleet-wide, per host,
 * and of each `proxy_jump`.
 */
export async function withSshKeyContents(configuration: FleetConfiguration): Promise<FleetConfiguration> {
  const sshConfig = configuration.ssh_config;
  if (sshConfig === undefined) return configuration;
  const hosts = await Promise.all(
    sshConfig.hosts.map(async (host, index) => {
      if (typeof host === 'string') return host;
      const field = `ssh_config.hosts[${index}]`;
      const sshKey =
        host.identity_file === undefined
          ? host.ssh_key
          : await readSshKey(host.identity_file, `${field}.identity_file`);
      const proxyJump = await withProxyKey(host.proxy_jump, `${field}.proxy_jump`);
      return {
        ...host,
        ...(sshKey ? { ssh_key: sshKey } : {}),
        ...(proxyJump ? { proxy_jump: proxyJump } : {}),
      };
    }),
  );
  const sshKey =
    sshConfig.identity_file === undefined
      ? sshConfig.ssh_key
      : await readSshKey(sshConfig.identity_file, 'ssh_config.identity_file');
  const proxyJump = await withProxyKey(sshConfig.proxy_jump, 'ssh_config.proxy_jump');
  return {
    ...configuration,
    ssh_config: {
      ...sshConfig,
      hosts,
      ...(sshKey ? { ssh_key: sshKey } : {}),
      ...(proxyJump ? { proxy_jump: proxyJump } : {}),
    },
  };
}
