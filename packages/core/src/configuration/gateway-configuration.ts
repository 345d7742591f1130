/** `type: gateway`: an instance that publishes services on a domain with HTTPS. */
import * as z from 'zod';
import { resourceNameSchema } from '../models/resource-names.js';
import { configurationBackendSchema } from './backend-type.js';
import { isPlainObject, selectSchema, strictObject, stringMapSchema } from './schema-helpers.js';

const letsEncryptCertificateSchema = strictObject({ type: z.literal('lets-encrypt') });
const acmCertificateSchema = strictObject({
  type: z.literal('acm'),
  /** ARN of a wildcard ACM certificate for the domain. */
  arn: z.string().min(1),
});

/**
 * A certificate the user gives (this project's addition to dstack's types, for domains no ACME
 * server reaches): a wildcard certificate for `*.{domain}` and its key, as PEM. In a configuration
 * file each may also be a path, relative to the file, which the CLI reads before sending.
 */
const customCertificateSchema = strictObject({
  type: z.literal('custom'),
  /** The certificate chain (PEM), leaf first, for `*.{domain}`. */
  certificate: z.string().min(1),
  /** The certificate's private key (PEM). Stored encrypted; API answers redact it. */
  private_key: z.string().min(1),
});

/** `{type: lets-encrypt}`, `{type: acm, arn}`, `{type: custom, certificate, private_key}`, or `null` for no certificate. */
const certificateSchema = selectSchema(
  (value) =>
    value === null
      ? z.null()
      : isPlainObject(value) && value.type === 'acm'
        ? acmCertificateSchema
        : isPlainObject(value) && value.type === 'custom'
          ? customCertificateSchema
          : letsEncryptCertificateSchema,
  [z.null(), letsEncryptCertificateSchema, acmCertificateSchema, customCertificateSchema] as const,
);

/** What API answers show instead of a custom certificate's private key. */
export const REDACTED_PRIVATE_KEY = '<redacted>';

/** A gateway configuration. */
export const gatewayConfigurationSchema = strictObject({
  type: z.literal('gateway'),
  /** Gateway name (lowercase letters, digits, dashes). Default: generated. */
  name: resourceNameSchema.optional(),
  /** Make this the project's default gateway. Default: it becomes the default when the project has none. */
  default: z.boolean().optional(),
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
  /** TLS certificate: `lets-encrypt`, `acm`, `custom` (PEM files) or `null` (plain HTTP). Default `{type: lets-encrypt}`. */
  certificate: certificateSchema.default(() => ({ type: 'lets-encrypt' as const })),
  /** Number of gateway instances (>= 1). Default 1. */
  replicas: z.int().min(1).default(1),
  /** Tags propagated to cloud resources. */
  tags: stringMapSchema.optional(),
});
export type GatewayConfiguration = z.infer<typeof gatewayConfigurationSchema>;
