/**
 * The server's management calls to a real gateway agent (on loopback here; through the SSH tunnel
 * in production, see test/gateway-aws.test.ts) carry the gateway's agent token: with it the state
 * is taken and the health and stats read; without it or with another, the agent refuses (401,
 * 403) and each call fails saying so.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GatewayState } from '@dstack/core/agent-protocol';
import { type GatewayServer, startGateway } from '@dstack/shim';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectGatewayStats, type GatewayApi, gatewayHealth, sendGatewayState } from './gateway-sync.js';

const TOKEN = 'the-gateway-token';
const state: GatewayState = { certificate: null, acme: null, services: [], token_hashes: {} };

describe("the server's calls to a gateway's management API", () => {
  const home = mkdtempSync(join(tmpdir(), 'dstack-gateway-sync-'));
  let gateway: GatewayServer;
  const api = (token: string | null): GatewayApi => ({ url: `http://127.0.0.1:${gateway.apiPort}`, token });

  beforeAll(async () => {
    gateway = await startGateway({
      home,
      apiToken: TOKEN,
      apiPort: 0,
      httpsPort: 0,
      httpPort: 0,
      publicHost: '127.0.0.1',
    });
  });

  afterAll(async () => {
    await gateway?.close();
    rmSync(home, { recursive: true, force: true });
  });

  it('send the state and read the health and stats with the gateway token', async () => {
    await sendGatewayState(api(TOKEN), state);
    expect(await gatewayHealth(api(TOKEN))).toMatchObject({ service: 'dstack-gateway', services: 0 });
    expect((await collectGatewayStats(api(TOKEN))).services).toEqual([]);
  });

  it('fail, naming the refusal, without the token or with another', async () => {
    await expect(gatewayHealth(api(null))).rejects.toThrow(/answered 401: .*requires its token/);
    await expect(sendGatewayState(api(null), state)).rejects.toThrow(/refused its state \(401\)/);
    await expect(collectGatewayStats(api(null))).rejects.toThrow(/answered 401/);
    await expect(gatewayHealth(api('another'))).rejects.toThrow(/answered 403/);
    await expect(sendGatewayState(api('another'), state)).rejects.toThrow(/refused its state \(403\)/);
  });
});
