/** Which of a project's backends launch gateways (the `gateways` capability), and the Compute of one. */
import { type ComputeWithGateways, hasCapability } from '@dstack/core';
import type { AppContext } from '../context.js';

export type GatewayCompute = { compute: ComputeWithGateways } | { refusal: string };

export async function gatewayComputeOf(
  app: AppContext,
  projectId: string,
  type: string,
): Promise<GatewayCompute> {
  const backends = await app.backends.getProjectBackends(projectId);
  const backend = backends.find((candidate) => candidate.type === type);
  if (!backend) {
    const configured = backends.map((candidate) => candidate.type).join(', ') || 'none';
    return { refusal: `backend ${type} is not configured in the project (configured: ${configured})` };
  }
  if (!hasCapability(backend.compute, 'gateways')) {
    const able = backends
      .filter((candidate) => hasCapability(candidate.compute, 'gateways'))
      .map((candidate) => candidate.type);
    return {
      refusal: `gateways are not supported by the ${type} backend; the project's backends with gateways: ${able.join(', ') || 'none'}`,
    };
  }
  return { compute: backend.compute };
}
