import { z } from 'zod';
import { BackendTypeSchema } from './backend-type.js';

export const GatewayCertificateSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('lets-encrypt') }),
  z.object({ type: z.literal('acm'), arn: z.string() }),
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
