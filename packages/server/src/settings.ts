/**
 * Server settings from the environment (`DSTACK_SERVER_*`), with dstack's defaults.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { ConfigurationError, DEFAULT_CODE_UPLOAD_LIMIT_BYTES } from '@dstack/core';
import { LETS_ENCRYPT_DIRECTORY_URL } from '@dstack/core/agent-protocol';
import type { ServerSettings } from './context.js';

export const DEFAULT_SERVER_PORT = 8000;
export const DEFAULT_SERVER_HOST = '127.0.0.1';
export const DEFAULT_MAX_OFFERS_TRIED = 25;
/** `DSTACK_SERVER_EVENTS_TTL_SECONDS` when unset (dstack's default): events are kept 30 days. */
export const DEFAULT_EVENTS_TTL_SECONDS = 30 * 24 * 3600;
/** `DSTACK_SERVER_OFFERS_DEADLINE` when unset: seconds a plan waits for one backend's offers. */
export const DEFAULT_OFFERS_DEADLINE_SECONDS = 10;
/**
 * How long a job that ends at once is still shown running (dstack's server looks at a running job
 * at most every 10 s, so there a job is running at least that long, and dstack's CLI counts on it).
 */
export const DEFAULT_ATTACH_WINDOW_SECONDS = 10;
/** `DSTACK_SERVER_BACKEND_VALIDATION_DEADLINE` when unset: seconds backends/create waits for the provider. */
export const DEFAULT_BACKEND_VALIDATION_DEADLINE_SECONDS = 5;
/** `DSTACK_SERVER_METRICS_COLLECT_INTERVAL` when unset: seconds between samples of a running job (dstack's 10). */
export const DEFAULT_METRICS_COLLECT_INTERVAL_SECONDS = 10;
/** `DSTACK_SERVER_METRICS_RUNNING_TTL_SECONDS` when unset (dstack's): a running job's samples kept for an hour. */
export const DEFAULT_METRICS_RUNNING_TTL_SECONDS = 3600;
/** `DSTACK_SERVER_METRICS_FINISHED_TTL_SECONDS` when unset (dstack's): a finished job's samples kept for a week. */
export const DEFAULT_METRICS_FINISHED_TTL_SECONDS = 7 * 24 * 3600;

function integerVariable(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  bounds: { min: number; max: number },
): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < bounds.min || value > bounds.max) {
    throw new ConfigurationError(
      `${name} must be a whole number from ${bounds.min} to ${bounds.max}, got "${raw}"`,
      { path: [name] },
    );
  }
  return value;
}

function urlVariable(env: NodeJS.ProcessEnv, name: string): string | null {
  const value = stringVariable(env, name);
  if (value === null) return null;
  if (!/^https?:\/\//.test(value) || !URL.canParse(value)) {
    throw new ConfigurationError(`${name} must be an http(s) URL, got "${value}"`, { path: [name] });
  }
  return value;
}

/** An image repository with its registry and no tag: `registry:5000/dstackai/base`. */
function imageRepositoryVariable(env: NodeJS.ProcessEnv, name: string): string | null {
  const value = stringVariable(env, name);
  if (value === null) return null;
  const lastPart = value.slice(value.lastIndexOf('/') + 1);
  if (!/^[A-Za-z0-9][A-Za-z0-9._:/-]*$/.test(value) || lastPart.includes(':') || value.endsWith('/')) {
    throw new ConfigurationError(
      `${name} must be an image repository without a tag (e.g. registry.internal:5000/dstackai/base), got "${value}"`,
      { path: [name] },
    );
  }
  return value;
}

/** An image with its registry and an optional tag: `registry:5000/dstackai/dind:v1`. */
function imageReferenceVariable(env: NodeJS.ProcessEnv, name: string): string | null {
  const value = stringVariable(env, name);
  if (value === null) return null;
  if (!/^[A-Za-z0-9][A-Za-z0-9._:/@-]*$/.test(value) || value.endsWith('/') || value.endsWith(':')) {
    throw new ConfigurationError(
      `${name} must be an image name (e.g. registry.internal:5000/dstackai/dind), got "${value}"`,
      { path: [name] },
    );
  }
  return value;
}

/** A part of an image tag: letters, digits, `.`, `_`. */
function imageTagPartVariable(env: NodeJS.ProcessEnv, name: string): string | null {
  const value = stringVariable(env, name);
  if (value === null) return null;
  if (!/^[A-Za-z0-9._]+$/.test(value)) {
    throw new ConfigurationError(`${name} must hold only letters, digits, "." and "_", got "${value}"`, {
      path: [name],
    });
  }
  return value;
}

/** `DSTACK_SERVER_SSHPROXY_PORT`: a port (0: a free one), or `off` for no SSH proxy. */
function sshProxyPortVariable(env: NodeJS.ProcessEnv): number | null {
  if (env.DSTACK_SERVER_SSHPROXY_PORT?.trim().toLowerCase() === 'off') return null;
  return integerVariable(env, 'DSTACK_SERVER_SSHPROXY_PORT', 0, { min: 0, max: 65535 });
}

/** The PEM certificates in the file a variable names; null when unset. */
function pemFileVariable(env: NodeJS.ProcessEnv, name: string): string | null {
  const path = stringVariable(env, name);
  if (path === null) return null;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigurationError(`${name}: cannot read ${path} (${(error as Error).message})`, {
      path: [name],
    });
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----')) {
    throw new ConfigurationError(`${name}: ${path} holds no PEM certificate`, { path: [name] });
  }
  return text;
}

/** `DSTACK_ACME_EAB_KID` with `DSTACK_ACME_EAB_HMAC_KEY`: both, or neither. */
function acmeExternalAccountVariables(env: NodeJS.ProcessEnv): { kid: string; hmacKey: string } | null {
  const kid = stringVariable(env, 'DSTACK_ACME_EAB_KID');
  const hmacKey = stringVariable(env, 'DSTACK_ACME_EAB_HMAC_KEY');
  if (kid === null && hmacKey === null) return null;
  if (kid === null || hmacKey === null) {
    const missing = kid === null ? 'DSTACK_ACME_EAB_KID' : 'DSTACK_ACME_EAB_HMAC_KEY';
    throw new ConfigurationError(
      `${missing} must be set with ${kid === null ? 'DSTACK_ACME_EAB_HMAC_KEY' : 'DSTACK_ACME_EAB_KID'}`,
      {
        path: [missing],
      },
    );
  }
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(hmacKey)) {
    throw new ConfigurationError('DSTACK_ACME_EAB_HMAC_KEY must be base64url', {
      path: ['DSTACK_ACME_EAB_HMAC_KEY'],
    });
  }
  return { kid, hmacKey };
}

function stringVariable(env: NodeJS.ProcessEnv, name: string): string | null {
  const value = env[name]?.trim();
  return value ? value : null;
}

/**
 * Reads the settings: `DSTACK_SERVER_DIR` (default `~/.dstack/server`),
 * `DSTACK_SERVER_HOST` (`127.0.0.1`), `DSTACK_SERVER_PORT` (8000),
 * `DSTACK_DATABASE_URL` (unset: SQLite), `DSTACK_SERVER_ADMIN_TOKEN`,
 * `DSTACK_SERVER_MAX_OFFERS_TRIED` (25), `DSTACK_DEFAULT_CREDS_DISABLED` (unset),
 * `DSTACK_SERVER_ALLOW_DEFAULT_CREDS` and `DSTACK_SERVER_ALLOW_CUSTOM_BACKEND_ENDPOINTS` (unset: API
 * requests may use neither), `DSTACK_SERVER_BACKEND_VALIDATION_DEADLINE` (seconds, 5),
 * `DSTACK_SHIM_DOWNLOAD_URL` and `DSTACK_RUNNER_DOWNLOAD_URL` (unset: the npm tarballs of the release),
 * `DSTACK_SERVER_CODE_UPLOAD_LIMIT` (bytes, 2 MiB; 0: no limit), `DSTACK_SERVER_CODE_UNPACKED_LIMIT`
 * (bytes a job's code or file archive may unpack to; unset: 64 times the upload limit; 0: no limit), `GPUHUNT_CATALOG_URL` (unset:
 * gpuhunt's bucket), `DSTACK_DOCKER_BASE_IMAGE` (or this server's older `DSTACK_BASE_IMAGE`),
 * `DSTACK_DOCKER_BASE_IMAGE_VERSION` and `DSTACK_DOCKER_BASE_IMAGE_UBUNTU_VERSION` (the default
 * image's repository and tag parts; unset: dstack 0.21's), `DSTACK_DIND_IMAGE` (the image of
 * `docker: true`; unset: `dstackai/dind`), `DSTACK_SERVER_METRICS_COLLECT_INTERVAL` (seconds, 10),
 * `DSTACK_SERVER_METRICS_RUNNING_TTL_SECONDS` (3600) and `DSTACK_SERVER_METRICS_FINISHED_TTL_SECONDS`
 * (7 days), `DSTACK_ENABLE_PROMETHEUS_METRICS` (set: `/metrics` is served),
 * `DSTACK_PROMETHEUS_AUTH_TOKEN` (the bearer token it requires), `DSTACK_SERVER_EVENTS_TTL_SECONDS`
 * (30 days; 0: no events are recorded; `events.ttl_seconds` of config.yml wins over it),
 * `DSTACK_ACME_SERVER` (the ACME directory of gateways' certificates; Let's Encrypt's production one),
 * `DSTACK_ACME_SERVER_CA_FILE` (PEM CAs gateways trust for the ACME server's TLS; unset: the system's),
 * `DSTACK_ACME_EAB_KID` and `DSTACK_ACME_EAB_HMAC_KEY` (an External Account Binding; unset: none),
 * `DSTACK_SERVER_ATTACH_WINDOW_SECONDS` (10; 0: none: how long a job whose commands end at once
 * is still shown running, for dstack's attaching clients), `DSTACK_SERVER_SSHPROXY_PORT` (the built-in SSH proxy's port; 0, the default, picks a free one;
 * `off`: none) and `DSTACK_SERVER_SSHPROXY_ADDRESS` (`host[:port]` clients are told; unset: where
 * it listens). `overrides` (e.g. from command-line
 * flags) win over the environment. Throws ConfigurationError naming the variable.
 */
export function loadServerSettings(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<ServerSettings> = {},
): ServerSettings {
  const serverDir = stringVariable(env, 'DSTACK_SERVER_DIR');
  const adminToken = stringVariable(env, 'DSTACK_SERVER_ADMIN_TOKEN');
  if (adminToken !== null && /\s/.test(adminToken)) {
    throw new ConfigurationError('DSTACK_SERVER_ADMIN_TOKEN must not contain whitespace', {
      path: ['DSTACK_SERVER_ADMIN_TOKEN'],
    });
  }
  const settings: ServerSettings = {
    serverDir: resolve(serverDir ?? join(homedir(), '.dstack', 'server')),
    host: stringVariable(env, 'DSTACK_SERVER_HOST') ?? DEFAULT_SERVER_HOST,
    port: integerVariable(env, 'DSTACK_SERVER_PORT', DEFAULT_SERVER_PORT, { min: 0, max: 65535 }),
    databaseUrl: stringVariable(env, 'DSTACK_DATABASE_URL'),
    adminToken,
    maxOffersTried: integerVariable(env, 'DSTACK_SERVER_MAX_OFFERS_TRIED', DEFAULT_MAX_OFFERS_TRIED, {
      min: 1,
      max: 10_000,
    }),
    defaultCredsEnabled: !isTruthy(env.DSTACK_DEFAULT_CREDS_DISABLED),
    allowDefaultCredsInApi: isTruthy(env.DSTACK_SERVER_ALLOW_DEFAULT_CREDS),
    allowCustomBackendEndpoints: isTruthy(env.DSTACK_SERVER_ALLOW_CUSTOM_BACKEND_ENDPOINTS),
    backendValidationDeadlineMs:
      integerVariable(
        env,
        'DSTACK_SERVER_BACKEND_VALIDATION_DEADLINE',
        DEFAULT_BACKEND_VALIDATION_DEADLINE_SECONDS,
        { min: 1, max: 600 },
      ) * 1000,
    shimDownloadUrl: urlVariable(env, 'DSTACK_SHIM_DOWNLOAD_URL'),
    runnerDownloadUrl: urlVariable(env, 'DSTACK_RUNNER_DOWNLOAD_URL'),
    catalogUrl: urlVariable(env, 'GPUHUNT_CATALOG_URL'),
    offersDeadlineMs:
      integerVariable(env, 'DSTACK_SERVER_OFFERS_DEADLINE', DEFAULT_OFFERS_DEADLINE_SECONDS, {
        min: 1,
        max: 3600,
      }) * 1000,
    // dstack's name wins; `DSTACK_BASE_IMAGE` is this server's older name for a mirror's repository.
    baseImage:
      imageRepositoryVariable(env, 'DSTACK_DOCKER_BASE_IMAGE') ??
      imageRepositoryVariable(env, 'DSTACK_BASE_IMAGE'),
    baseImageVersion: imageTagPartVariable(env, 'DSTACK_DOCKER_BASE_IMAGE_VERSION'),
    baseImageUbuntuVersion: imageTagPartVariable(env, 'DSTACK_DOCKER_BASE_IMAGE_UBUNTU_VERSION'),
    dindImage: imageReferenceVariable(env, 'DSTACK_DIND_IMAGE'),
    eventsTtlSeconds: integerVariable(env, 'DSTACK_SERVER_EVENTS_TTL_SECONDS', DEFAULT_EVENTS_TTL_SECONDS, {
      min: 0,
      max: Number.MAX_SAFE_INTEGER,
    }),
    codeUploadLimitBytes: integerVariable(
      env,
      'DSTACK_SERVER_CODE_UPLOAD_LIMIT',
      DEFAULT_CODE_UPLOAD_LIMIT_BYTES,
      { min: 0, max: Number.MAX_SAFE_INTEGER },
    ),
    codeUnpackedLimitBytes: env.DSTACK_SERVER_CODE_UNPACKED_LIMIT?.trim()
      ? integerVariable(env, 'DSTACK_SERVER_CODE_UNPACKED_LIMIT', 0, { min: 0, max: Number.MAX_SAFE_INTEGER })
      : null,
    metricsCollectIntervalMs:
      integerVariable(
        env,
        'DSTACK_SERVER_METRICS_COLLECT_INTERVAL',
        DEFAULT_METRICS_COLLECT_INTERVAL_SECONDS,
        {
          min: 1,
          max: 3600,
        },
      ) * 1000,
    metricsRunningTtlSeconds: integerVariable(
      env,
      'DSTACK_SERVER_METRICS_RUNNING_TTL_SECONDS',
      DEFAULT_METRICS_RUNNING_TTL_SECONDS,
      { min: 1, max: Number.MAX_SAFE_INTEGER },
    ),
    metricsFinishedTtlSeconds: integerVariable(
      env,
      'DSTACK_SERVER_METRICS_FINISHED_TTL_SECONDS',
      DEFAULT_METRICS_FINISHED_TTL_SECONDS,
      { min: 1, max: Number.MAX_SAFE_INTEGER },
    ),
    // dstack enables it when the variable is set at all.
    prometheusMetricsEnabled: env.DSTACK_ENABLE_PROMETHEUS_METRICS !== undefined,
    prometheusAuthToken: stringVariable(env, 'DSTACK_PROMETHEUS_AUTH_TOKEN'),
    acmeServer: urlVariable(env, 'DSTACK_ACME_SERVER') ?? LETS_ENCRYPT_DIRECTORY_URL,
    acmeServerCaCertificates: pemFileVariable(env, 'DSTACK_ACME_SERVER_CA_FILE'),
    acmeExternalAccount: acmeExternalAccountVariables(env),
    attachWindowMs:
      integerVariable(env, 'DSTACK_SERVER_ATTACH_WINDOW_SECONDS', DEFAULT_ATTACH_WINDOW_SECONDS, {
        min: 0,
        max: 600,
      }) * 1000,
    sshProxyPort: sshProxyPortVariable(env),
    sshProxyAddress: stringVariable(env, 'DSTACK_SERVER_SSHPROXY_ADDRESS'),
  };
  return { ...settings, ...definedOnly(overrides) };
}

function isTruthy(value: string | undefined): boolean {
  return value !== undefined && !['', '0', 'false', 'no', 'off'].includes(value.trim().toLowerCase());
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
