/**
 * Where a service answers without a gateway: the server's own proxy at
 * `/proxy/services/{project}/{run}/`, given on the Run as dstack's `ServiceSpec`
 * (a path, relative to the server's URL, as dstack gives it).
 */
import type { ServiceConfiguration, ServiceSpec } from '@dstack/core';
import type { StoredRunSpec } from '../db/json-columns.js';

/** The path prefix of the in-server service proxy. */
export const SERVICE_PROXY_PREFIX = '/proxy/services';

/** `/proxy/services/{project}/{run}` without a trailing slash, names URL-encoded. */
export function serviceProxyPrefix(projectName: string, runName: string): string {
  return `${SERVICE_PROXY_PREFIX}/${encodeURIComponent(projectName)}/${encodeURIComponent(runName)}`;
}

/** The configuration when it is a service's, else null. */
export function serviceConfigurationOf(runSpec: StoredRunSpec): ServiceConfiguration | null {
  const { configuration } = runSpec;
  return configuration.type === 'service' ? configuration : null;
}

/** The port the service listens on in its container (`port: 8000` is stored as `{container_port: 8000}`). */
export function servicePortOf(service: ServiceConfiguration): number {
  return service.port.container_port;
}

/** Whether the proxy asks for a dstack token; dstack's default is `auth: true`. */
export function serviceRequiresAuth(service: ServiceConfiguration): boolean {
  return service.auth;
}

/**
 * The Run's `service` field; null when the run is not a service. As in dstack, the model's
 * `base_url` is the service's own OpenAI-compatible prefix behind the proxy (`…/v1` by
 * default), and `options.openai.model` holds the model's configuration. The project-wide
 * router over every model, `/proxy/models/{project}/`, is proxies/model-proxy.ts.
 */
export function serviceSpecOf(
  runSpec: StoredRunSpec,
  projectName: string,
  runName: string,
): ServiceSpec | null {
  const service = serviceConfigurationOf(runSpec);
  if (!service) return null;
  const url = `${serviceProxyPrefix(projectName, runName)}/`;
  const model = service.model
    ? {
        name: service.model.name,
        base_url:
          service.model.format === 'tgi'
            ? url
            : `${url}${(service.model.prefix ?? '/v1').replace(/^\/+/, '').replace(/\/+$/, '')}`,
        type: service.model.type ?? 'chat',
      }
    : null;
  return { url, model, options: service.model ? { openai: { model: service.model } } : {} };
}
