/**
 * Which fields of a gateway configuration this server honours, and the refusal of the others at
 * `gateways/create`: the table the field-decisions test walks. See `field-decisions.ts`.
 */
import type { GatewayConfiguration } from '@dstack/core';
import { type FieldDecisions, refusedFields, refuseFields } from '../field-decisions.js';

export const GATEWAY_FIELD_DECISIONS: FieldDecisions = {
  type: { honoured: 'gateways/create takes gateway configurations (gateways.ts)' },
  name: { honoured: 'the gateway name, unique per project (gateways.ts)' },
  default: { honoured: "the project's default gateway; unset: default when the project has none" },
  backend: { honoured: "the backend whose Compute launches it; refused without the 'gateways' capability" },
  region: { honoured: 'given to the backend (createGatewayReplica)' },
  instance_type: { honoured: "given to the backend (its default otherwise: t3.micro on AWS, as dstack's)" },
  domain: { honoured: 'the wildcard domain: services at {run}.{domain} (services/service-gateway.ts)' },
  public_ip: { honoured: 'given to the backend; the server reaches the gateway at that address' },
  certificate: {
    refused: 'acm (an AWS load balancer); lets-encrypt, custom and null are served',
    subtree: true,
    check: (value) =>
      (value as { type?: unknown } | null)?.type === 'acm'
        ? 'acm needs an AWS load balancer, which gateways do not have yet; use lets-encrypt (the default) or type: custom'
        : null,
    example: { certificate: { type: 'acm', arn: 'arn:aws:acm:us-east-1:000000000000:certificate/x' } },
  },
  replicas: {
    refused: 'one gateway instance per gateway',
    check: (value) => (value === undefined || value === 1 ? null : 'only 1 is supported yet'),
    example: { replicas: 2 },
  },
  tags: { honoured: 'the backend tags the gateway instance', subtree: true },
};

export function refuseUnsupportedGatewayFields(configuration: GatewayConfiguration): void {
  refuseFields(refusedFields(GATEWAY_FIELD_DECISIONS, configuration), ['configuration']);
}
