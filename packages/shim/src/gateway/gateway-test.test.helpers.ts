/**
 * What the gateway agent's loopback tests share: a gateway on ephemeral ports with a known
 * management token, a service entry with the fields a test does not care about filled in, and
 * a listener on a free loopback port.
 */
import type { Server } from 'node:http';
import type { AddressInfo, Server as TcpServer } from 'node:net';
import type { GatewayService } from '@dstack/core/agent-protocol';
import { type GatewayOptions, type GatewayServer, startGateway } from './gateway-server.js';

/** The gateway's agent token, which its management API requires. */
export const GATEWAY_API_TOKEN = 'gateway-api-token';
export const GATEWAY_API_HEADERS = { authorization: `Bearer ${GATEWAY_API_TOKEN}` };

/** A gateway serving plain HTTP on loopback, every port ephemeral. */
export function startLoopbackGateway(
  home: string,
  options: Partial<GatewayOptions> = {},
): Promise<GatewayServer> {
  return startGateway({
    home,
    apiToken: GATEWAY_API_TOKEN,
    apiPort: 0,
    httpsPort: 0,
    httpPort: 0,
    publicHost: '127.0.0.1',
    ...options,
  });
}

/** Service `name` at `name.example.test`, public, plain HTTP, no replicas unless `fields` say. */
export function gatewayService(name: string, fields: Partial<GatewayService> = {}): GatewayService {
  return {
    project: 'main',
    run_name: name,
    run_id: `run-${name}`,
    hostname: `${name}.example.test`,
    auth: false,
    https: false,
    replicas: [],
    scales_from_zero: false,
    rate_limits: [],
    ...fields,
  };
}

/** Starts `server` on a free loopback port and answers that port. */
export async function listenOnLoopback(server: Server | TcpServer): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}
