import * as z from 'zod';
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
  /**
   * The gateway's agent token, chosen by the server per gateway: the gateway agent's management
   * API answers only requests that carry it. Give it to the agent as the VM bootstrap does
   * (`buildGatewayUserData`: a root-only file passed as `--token-file`), never on its command
   * line, and keep it out of logs, tags and labels: whoever holds it and reaches the agent decides
   * what the gateway serves.
   */
  agent_token: z.string().min(1),
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
/** dstack's `GatewaySpec`: the configuration as its client sends it (every unset field `null`). */
export const GatewaySpecSchema = z.object({
  configuration: z.looseObject({ type: z.string() }),
  configuration_path: z.string().nullish(),
});
export type GatewaySpec = z.output<typeof GatewaySpecSchema>;
/** `/api/project/{p}/gateways/get_plan` (dstack's `dstack apply -f gateway.yml` asks it first). */
export const GetGatewayPlanRequestSchema = z.object({ spec: GatewaySpecSchema });
/** `/api/project/{p}/gateways/apply`: the plan's spec and the gateway the plan saw (null: none). */
export const ApplyGatewayPlanRequestSchema = z.object({
  plan: z.object({
    spec: GatewaySpecSchema,
    current_resource: z.looseObject({ id: z.string() }).nullish(),
  }),
  force: z.boolean().default(false),
});
/** dstack's `GatewayPlan`. */
export const GatewayPlanSchema = z.object({
  project_name: z.string(),
  user: z.string(),
  spec: GatewaySpecSchema,
  effective_spec: GatewaySpecSchema,
  current_resource: GatewaySchema.nullable(),
  action: z.enum(['create', 'update']),
});
export type GatewayPlan = z.output<typeof GatewayPlanSchema>;
/** `/api/project/{p}/gateways/delete`. */
export const DeleteGatewaysRequestSchema = z.object({ names: z.array(z.string()).min(1) });
/** `/api/project/{p}/gateways/set_default`. */
export const SetDefaultGatewayRequestSchema = z.object({
  name: z.string(),
  gateway_project: z.string().nullish(),
});
/** `/api/project/{p}/gateways/set_wildcard_domain`. */
export const SetWildcardDomainRequestSchema = z.object({ name: z.string(), wildcard_domain: z.string() });
