/**
 * Where a service answers: without a gateway, the server's own proxy at
 * `/proxy/services/{project}/{run}/` (a path, relative to the server's URL, as dstack gives it);
 * on a gateway, `https://{run}.{domain}/`. Given on the Run as dstack's `ServiceSpec`.
 */
import type { ReplicaGroup, ServiceConfiguration, ServiceSpec } from '@dstack/core';
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
  gatewayHostname: string | null = null,
  gatewayHttps: boolean | null = null,
): ServiceSpec | null {
  const service = serviceConfigurationOf(runSpec);
  if (!service) return null;
  // On a gateway the service has its own host (dstack's `https://{run}.{domain}/`); the scheme was
  // decided at apply (rows from before that: `https: false` alone is plain HTTP).
  const https = gatewayHttps ?? service.https !== false;
  const url = gatewayHostname
    ? `${https ? 'https' : 'http'}://${gatewayHostname}/`
    : `${serviceProxyPrefix(projectName, runName)}/`;
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

/** dstack's name of the one group of a service without replica groups. */
export const DEFAULT_REPLICA_GROUP = '0';

/** One group of a service's replicas, as the run pipeline scales it. */
export interface ServiceReplicaGroup {
  /** The group's name (its index when unnamed); `0` for a service without groups. */
  name: string;
  range: { min: number; max: number };
  scaling: ServiceConfiguration['scaling'];
  /** The group as configured (its own resources, commands, image…); undefined without groups. */
  configured: ReplicaGroup | undefined;
}

/**
 * A service's replica groups (dstack's `replica_groups`): the `replicas` list, each named by its
 * index when unnamed, or one group `0` holding `replicas: N` (N..N), a range, or one replica.
 */
export function replicaGroupsOf(service: ServiceConfiguration): ServiceReplicaGroup[] {
  const replicas = service.replicas;
  if (Array.isArray(replicas)) {
    return replicas.map((group, index) => ({
      name: group.name ?? String(index),
      range: { min: group.count.min, max: group.count.max ?? group.count.min },
      scaling: group.scaling,
      configured: group,
    }));
  }
  const range = replicas ? { min: replicas.min, max: replicas.max ?? replicas.min } : { min: 1, max: 1 };
  return [{ name: DEFAULT_REPLICA_GROUP, range, scaling: service.scaling, configured: undefined }];
}

/** A service's replica bounds, all groups together: `replicas: N` is N..N; one replica by default. */
export function replicaRangeOf(service: ServiceConfiguration): { min: number; max: number } {
  return replicaGroupsOf(service).reduce(
    (sum, group) => ({ min: sum.min + group.range.min, max: sum.max + group.range.max }),
    { min: 0, max: 0 },
  );
}

/** Whether the service has probes: its replicas get requests only once they pass. */
export function serviceHasProbes(service: ServiceConfiguration): boolean {
  return (service.probes?.length ?? 0) > 0;
}
