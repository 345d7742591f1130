/** `type: gateway`: an instance that publishes services on a domain with HTTPS. */
import { z } from 'zod';
import { resourceNameSchema } from '../models/resource-names.js';
import { configurationBackendSchema } from './backend-type.js';
import { isPlainObject, selectSchema, strictObject, stringMapSchema } from './schema-helpers.js';

const letsEncryptCertificateSchema = strictObject({ type: z.literal('lets-encrypt') });
const acmCertificateSchema = strictObject({
  type: z.literal('acm'),
  /** ARN of a wildcard ACM certificate for the domain. */
  arn: z.string().min(1),
});

/** `{type: lets-encrypt}`, `{type: acm, arn}`, or `null` for no certificate. */
const certificateSchema = selectSchema(
  (value) =>
    value === null
      ? z.null()
      : isPlainObject(value) && value.type === 'acm'
        ? acmCertificateSchema
        : letsEncryptCertificateSchema,
  [z.null(), letsEncryptCertificateSchema, acmCertificateSchema] as const,
);

/** A gateway configuration. */
export const gatewayConfigurationSchema = strictObject({
  type: z.literal('gateway'),
  /** Gateway name (lowercase letters, digits, dashes). Default: generated. */
  name: resourceNameSchema.optional(),
  /** Make this the project's default gateway. Default `false`. */
  default: z.boolean().default(false),
  /** Backend to run the gateway in. Required. */
  backend: configurationBackendSchema,
  /** Region to run the gateway in. Required. */
  region: z.string().min(1),
  /** Instance type. Default: the backend's small CPU instance. */
  instance_type: z.string().min(1).optional(),
  /** Wildcard domain for services, e.g. `example.com`. */
  domain: z.string().min(1).optional(),
  /** Give the gateway a public IP. Default `true`. */
  public_ip: z.boolean().default(true),
  /** TLS certificate. Default `{type: lets-encrypt}`. */
  certificate: certificateSchema.default(() => ({ type: 'lets-encrypt' as const })),
  /** Number of gateway instances (>= 1). Default 1. */
  replicas: z.int().min(1).default(1),
  /** Tags propagated to cloud resources. */
  tags: stringMapSchema.optional(),
});
export type GatewayConfiguration = z.infer<typeof gatewayConfigurationSchema>;
