import { z } from 'zod';
import { BackendTypeSchema } from './backend-type.js';
import { GatewayReplicaStatusSchema, GatewayStatusSchema } from './statuses.js';

export const GatewayCertificateSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('lets-encrypt') }),
  z.object({ type: z.literal('acm'), arn: z.string() }),
  z.object({ type: z.literal('custom') }),
]);
export type GatewayCertificate = z.output<typeof GatewayCertificateSchema>;

/** What a backend needs to launch one gateway replica (dstack's `GatewayComputeConfiguration`). */
export const GatewayReplicaConfigurationSchema = z.object({
  project_name: z.string(),
  instance_name: z.string(),
  backend: BackendTypeSchema,
  region: z.string(),
  instance_type: z.string().nullish(),
  public_ip: z.boolean(),
  /** The project key the server will use to reach the gateway over SSH. */
  ssh_key_pub: z.string(),
  certificate: GatewayCertificateSchema.nullish(),
  tags: z.record(z.string(), z.string()).nullish(),
  /** Router settings (e.g. sglang), passed through. */
  router: z.record(z.string(), z.unknown()).nullish(),
  /** Where the instance downloads the agent runtime it runs the gateway from (as `InstanceConfiguration`). */
  agent_download_url: z.string().nullish(),
  agent_download_sha256: z.string().nullish(),
  agent_download_size: z.number().nullish(),
});
export type GatewayReplicaConfiguration = z.output<typeof GatewayReplicaConfigurationSchema>;

export const GatewayReplicaProvisioningDataSchema = z.object({
  instance_id: z.string(),
  /** The address the server connects to (an IP, or a DNS name for Kubernetes). */
  ip_address: z.string(),
  region: z.string(),
  availability_zone: z.string().nullish(),
  /** The address users point their domain at, when it differs from `ip_address` (load balancer). */
  hostname: z.string().nullish(),
  /** Backend-specific data, a JSON string. */
  backend_data: z.string().nullish(),
});
export type GatewayReplicaProvisioningData = z.output<typeof GatewayReplicaProvisioningDataSchema>;

/** One gateway instance as the API shows it (dstack's `GatewayReplica`). */
export const GatewayReplicaSchema = z.object({
  hostname: z.string().nullish(),
  replica_num: z.int(),
  backend: BackendTypeSchema.nullish(),
  region: z.string().nullish(),
  created_at: z.string(),
  status: GatewayReplicaStatusSchema,
  status_message: z.string().nullish(),
});
export type GatewayReplica = z.output<typeof GatewayReplicaSchema>;

/**
 * A gateway as `gateways/list|get|create` answer (dstack's `Gateway`). `configuration` is the
 * stored `type: gateway` configuration (a custom certificate's key redacted); `ip_address` is
 * kept for older clients, as dstack keeps it.
 */
export const GatewaySchema = z.object({
  id: z.string(),
  name: z.string(),
  project_name: z.string(),
  configuration: z.looseObject({ type: z.literal('gateway') }),
  created_at: z.string(),
  status: GatewayStatusSchema,
  status_message: z.string().nullish(),
  hostname: z.string().nullish(),
  wildcard_domain: z.string().nullish(),
  default: z.boolean(),
  replicas: z.array(GatewayReplicaSchema).default(() => []),
  backend: BackendTypeSchema.nullish(),
  region: z.string().nullish(),
  ip_address: z.string().nullish(),
  instance_id: z.string().nullish(),
});
export type Gateway = z.output<typeof GatewaySchema>;

/** `/api/project/{p}/gateways/list`. */
export const ListGatewaysRequestSchema = z.object({ include_imported: z.boolean().default(false) });
/** `/api/project/{p}/gateways/get`. */
export const GetGatewayRequestSchema = z.object({ name: z.string() });
/** `/api/project/{p}/gateways/create`: the configuration is validated by the server. */
export const CreateGatewayRequestSchema = z.object({ configuration: z.looseObject({ type: z.string() }) });
/** `/api/project/{p}/gateways/delete`. */
export const DeleteGatewaysRequestSchema = z.object({ names: z.array(z.string()).min(1) });
/** `/api/project/{p}/gateways/set_default`. */
export const SetDefaultGatewayRequestSchema = z.object({
  name: z.string(),
  gateway_project: z.string().nullish(),
});
/** `/api/project/{p}/gateways/set_wildcard_domain`. */
export const SetWildcardDomainRequestSchema = z.object({ name: z.string(), wildcard_domain: z.string() });
