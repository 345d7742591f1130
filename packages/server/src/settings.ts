/**
 * The server's settings from the environment (`DSTACK_SERVER_*` and dstack's other variables), with
 * dstack's defaults: the process's own (directory, address, database, admin token) here, and each
 * domain's group read by that domain's module.
 */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { ConfigurationError } from '@dstack/core';
import { type AgentDownloadSettings, readAgentDownloadSettings } from './agents/agent-download-settings.js';
import { type BackendSettings, readBackendSettings } from './backends/backend-settings.js';
import { type Environment, integerVariable, stringVariable } from './environment-variables.js';
import { type EventSettings, readEventSettings } from './events/event-settings.js';
import { type AcmeSettings, readAcmeSettings } from './gateways/acme-settings.js';
import { type MetricsSettings, readMetricsSettings } from './metrics/metrics-settings.js';
import { readSshProxySettings, type SshProxySettings } from './proxies/sshproxy/ssh-proxy-settings.js';
import { type CodeSettings, readCodeSettings } from './repos/code-settings.js';
import { type ImageSettings, readImageSettings } from './runs/image-settings.js';

export const DEFAULT_SERVER_PORT = 8000;
export const DEFAULT_SERVER_HOST = '127.0.0.1';

/** The process's own settings: what command-line flags may override. */
export interface ProcessSettings {
  /** `DSTACK_SERVER_DIR`, default `~/.dstack/server`: config.yml, data/, local instances. */
  serverDir: string;
  /** `DSTACK_SERVER_HOST`, default `127.0.0.1`. */
  host: string;
  /** `DSTACK_SERVER_PORT`, default 8000; 0 picks a free port. */
  port: number;
  /** `DSTACK_DATABASE_URL`; null means SQLite at `{serverDir}/data/sqlite.db`. */
  databaseUrl: string | null;
  /** `DSTACK_SERVER_ADMIN_TOKEN`: the admin token to use instead of a generated one. */
  adminToken: string | null;
}

/** Every setting of the server, by domain (each group's variables and defaults are in its module). */
export interface ServerSettings extends ProcessSettings {
  backends: BackendSettings;
  agents: AgentDownloadSettings;
  code: CodeSettings;
  images: ImageSettings;
  metrics: MetricsSettings;
  events: EventSettings;
  acme: AcmeSettings;
  sshProxy: SshProxySettings;
}

/**
 * Reads the settings; `overrides` (e.g. from command-line flags) win over the environment. Throws
 * a ConfigurationError naming the variable.
 */
export function loadServerSettings(
  env: Environment = process.env,
  overrides: Partial<ProcessSettings> = {},
): ServerSettings {
  return {
    ...readProcessSettings(env),
    ...definedOnly(overrides),
    backends: readBackendSettings(env),
    agents: readAgentDownloadSettings(env),
    code: readCodeSettings(env),
    images: readImageSettings(env),
    metrics: readMetricsSettings(env),
    events: readEventSettings(env),
    acme: readAcmeSettings(env),
    sshProxy: readSshProxySettings(env),
  };
}

function readProcessSettings(env: Environment): ProcessSettings {
  const serverDir = stringVariable(env, 'DSTACK_SERVER_DIR');
  const adminToken = stringVariable(env, 'DSTACK_SERVER_ADMIN_TOKEN');
  if (adminToken !== null && /\s/.test(adminToken)) {
    throw new ConfigurationError('DSTACK_SERVER_ADMIN_TOKEN must not contain whitespace', {
      path: ['DSTACK_SERVER_ADMIN_TOKEN'],
    });
  }
  return {
    serverDir: resolve(serverDir ?? join(homedir(), '.dstack', 'server')),
    host: stringVariable(env, 'DSTACK_SERVER_HOST') ?? DEFAULT_SERVER_HOST,
    port: integerVariable(env, 'DSTACK_SERVER_PORT', DEFAULT_SERVER_PORT, { min: 0, max: 65535 }),
    databaseUrl: stringVariable(env, 'DSTACK_DATABASE_URL'),
    adminToken,
  };
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
