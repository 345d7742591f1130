/**
 * The kubeconfig file (kubeconfig.v1): which API server each context talks to, with which
 * credentials, and the clusters a backend config enables (dstack's
 * `get_clusters_from_backend_config`: one per `contexts` entry, or the current context).
 */
import { readFileSync } from 'node:fs';
import { ServerClientError } from '@dstack/core';
import { parse as parseYaml } from 'yaml';
import type { KubernetesBackendConfig, KubernetesProxyJumpConfig } from './kubernetes-config.js';

/** How to reach and authenticate to one API server. */
export interface ApiServerAccess {
  /** `https://host:port` (or http) of the API server. */
  server: string;
  /** PEM of the CA that signed the server's certificate; absent: the system's CAs. */
  certificateAuthority?: string;
  /** Skip verifying the server's certificate (`insecure-skip-tls-verify`). */
  insecureSkipTlsVerify?: boolean;
  /** Client certificate and key (PEM), for certificate authentication. */
  clientCertificate?: string;
  clientKey?: string;
  /** A bearer token. */
  token?: string;
  /** Basic authentication. */
  username?: string;
  password?: string;
}

/** One enabled cluster: a kubeconfig context and where dstack's objects go in it. */
export interface KubernetesCluster {
  contextName: string;
  /** The region name offers carry: the context name, or "" for the current context. */
  region: string;
  namespace: string;
  proxyJump: KubernetesProxyJumpConfig;
  access: ApiServerAccess;
}

/** dstack's region of the kubeconfig's current context, when `contexts` is not set. */
export const CURRENT_CONTEXT_REGION = '';

type Named<T> = { name?: unknown } & Record<string, unknown> & { [key: string]: T | unknown };

function configError(message: string): ServerClientError {
  return new ServerClientError(`kubeconfig: ${message}`, { fields: [['kubeconfig']] });
}

function findNamed(list: unknown, name: string, kind: string, inner: string): Record<string, unknown> {
  const entries = Array.isArray(list) ? (list as Named<unknown>[]) : [];
  const entry = entries.find((each) => each?.name === name);
  if (!entry) throw configError(`${kind} "${name}" not found`);
  const value = entry[inner];
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

function optionalString(record: Record<string, unknown>, key: string): string | undefined {
  const value = record[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** A PEM given inline (`*-data`, base64) or by path. */
function pem(record: Record<string, unknown>, key: string): string | undefined {
  const data = optionalString(record, `${key}-data`);
  if (data !== undefined) return Buffer.from(data, 'base64').toString('utf8');
  const path = optionalString(record, key);
  return path === undefined ? undefined : readFileSync(path, 'utf8');
}

/** The kubeconfig's YAML as an object; a clear error when it is not one. */
export function parseKubeconfig(data: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = parseYaml(data);
  } catch (error) {
    throw configError(`not valid YAML: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw configError('expected a kubeconfig mapping (apiVersion: v1, kind: Config)');
  }
  return parsed as Record<string, unknown>;
}

/** The API server and credentials of `contextName`, and the context's namespace. */
export function contextAccess(
  kubeconfig: Record<string, unknown>,
  contextName: string,
): { access: ApiServerAccess; namespace: string } {
  const context = findNamed(kubeconfig.contexts, contextName, 'context', 'context');
  const clusterName = optionalString(context, 'cluster');
  if (clusterName === undefined) throw configError(`context "${contextName}" names no cluster`);
  const cluster = findNamed(kubeconfig.clusters, clusterName, 'cluster', 'cluster');
  const userName = optionalString(context, 'user');
  const user = userName === undefined ? {} : findNamed(kubeconfig.users, userName, 'user', 'user');
  const server = optionalString(cluster, 'server');
  if (server === undefined) throw configError(`cluster "${clusterName}" has no server`);
  if (user.exec !== undefined || user['auth-provider'] !== undefined) {
    throw configError(
      `user "${userName}" authenticates with an exec or auth-provider plugin, which this backend does not run; use a token or a client certificate`,
    );
  }
  const tokenFile = optionalString(user, 'tokenFile');
  const access: ApiServerAccess = {
    server: server.replace(/\/+$/, ''),
    certificateAuthority: pem(cluster, 'certificate-authority'),
    insecureSkipTlsVerify: cluster['insecure-skip-tls-verify'] === true,
    clientCertificate: pem(user, 'client-certificate'),
    clientKey: pem(user, 'client-key'),
    token: optionalString(user, 'token') ?? (tokenFile ? readFileSync(tokenFile, 'utf8').trim() : undefined),
    username: optionalString(user, 'username'),
    password: optionalString(user, 'password'),
  };
  return { access, namespace: optionalString(context, 'namespace') ?? 'default' };
}

/**
 * The clusters a backend config enables, as dstack: each of `contexts` (region = context name,
 * namespace = the context's, its own `proxy_jump`), or else the kubeconfig's current context
 * (region "", namespace = `namespace` or "default", the top-level `proxy_jump`).
 */
export function clustersOf(config: KubernetesBackendConfig, kubeconfigData: string): KubernetesCluster[] {
  const kubeconfig = parseKubeconfig(kubeconfigData);
  if (config.contexts != null) {
    return config.contexts.map((entry) => {
      const contextName = typeof entry === 'string' ? entry : entry.name;
      const { access, namespace } = contextAccess(kubeconfig, contextName);
      const proxyJump = typeof entry === 'string' ? {} : (entry.proxy_jump ?? {});
      return { contextName, region: contextName, namespace, proxyJump, access };
    });
  }
  const current = optionalString(kubeconfig, 'current-context');
  if (current === undefined) throw configError('current-context is not set and contexts are not configured');
  const { access } = contextAccess(kubeconfig, current);
  return [
    {
      contextName: current,
      region: CURRENT_CONTEXT_REGION,
      namespace: config.namespace ?? 'default',
      proxyJump: config.proxy_jump ?? {},
      access,
    },
  ];
}
