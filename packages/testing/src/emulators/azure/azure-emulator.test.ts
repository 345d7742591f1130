import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AzureEmulator, startAzureEmulator } from './azure-emulator.js';

/** What Resource Manager answers, as far as these tests read it. */
interface ArmDocument {
  error?: { code?: string };
  properties?: { provisioningState?: string };
}

// The emulator as Azure's wire protocol defines it, over plain HTTPS requests (the SDK-level
// behaviour is covered by @dstack/backend-azure's tests).
describe('Azure emulator', () => {
  let azure: AzureEmulator;
  let dispatcher: Agent;
  beforeAll(async () => {
    azure = await startAzureEmulator({ timeline: { provisioningMs: 20, deletingMs: 10 } });
    dispatcher = new Agent({ connect: { ca: azure.certificate } });
  });
  afterAll(async () => {
    await dispatcher?.close();
    await azure?.close();
  });

  const token = async (secret = azure.servicePrincipal.clientSecret) => {
    const answer = await request(`${azure.url}/${azure.tenantId}/oauth2/v2.0/token`, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: azure.servicePrincipal.clientId,
        client_secret: secret,
        scope: 'https://management.azure.com/.default',
      }).toString(),
    });
    return { status: answer.statusCode, body: (await answer.body.json()) as Record<string, unknown> };
  };
  const arm = async (method: 'GET' | 'PUT' | 'DELETE', path: string, body?: unknown, bearer?: string) => {
    const answer = await request(
      `${azure.url}/subscriptions/${azure.subscriptionId}${path}?api-version=2024-07-01`,
      {
        method,
        dispatcher,
        headers: {
          'content-type': 'application/json',
          ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      },
    );
    const text = await answer.body.text();
    return {
      status: answer.statusCode,
      headers: answer.headers,
      body: text ? (JSON.parse(text) as ArmDocument) : {},
    };
  };
  const until = async (what: string, probe: () => Promise<boolean>) => {
    const deadline = Date.now() + 10_000;
    while (!(await probe())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  it("refuses a wrong client secret with Entra ID's AADSTS7000215, and calls without a token", async () => {
    const refused = await token('not-the-secret');
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ error: 'invalid_client', error_codes: [7000215] });

    const anonymous = await arm('GET', '/resourcegroups');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error?.code).toBe('InvalidAuthenticationToken');
  });

  it("creates a VM through a long-running operation and keeps what Azure's default deleteOption (Detach) keeps", async () => {
    const bearer = String((await token()).body.access_token);
    const group = '/resourceGroups/rg-detach';
    expect((await arm('PUT', group, { location: 'eastus' }, bearer)).status).toBe(201);
    const network = `${group}/providers/Microsoft.Network/virtualNetworks/net`;
    await arm(
      'PUT',
      network,
      {
        location: 'eastus',
        properties: { subnets: [{ name: 'sub', properties: { addressPrefix: '10.0.0.0/24' } }] },
      },
      bearer,
    );
    const vm = {
      location: 'eastus',
      properties: {
        hardwareProfile: { vmSize: 'Standard_F2s_v2' },
        storageProfile: { imageReference: { publisher: 'canonical' }, osDisk: { createOption: 'FromImage' } },
        networkProfile: {
          networkInterfaceConfigurations: [
            {
              name: 'nic',
              properties: {
                ipConfigurations: [
                  {
                    name: 'ip',
                    properties: {
                      subnet: { id: `/subscriptions/${azure.subscriptionId}${network}/subnets/sub` },
                      publicIPAddressConfiguration: { name: 'pip' },
                    },
                  },
                ],
              },
            },
          ],
        },
      },
    };
    const created = await arm('PUT', `${group}/providers/Microsoft.Compute/virtualMachines/vm1`, vm, bearer);
    expect(created.status).toBe(201);
    expect(created.body.properties?.provisioningState).toBe('Creating');
    const operationUrl = new URL(String(created.headers['azure-asyncoperation']));
    await until('the create to succeed', async () => {
      const answer = await request(operationUrl, {
        dispatcher,
        headers: { authorization: `Bearer ${bearer}` },
      });
      return ((await answer.body.json()) as { status: string }).status === 'Succeeded';
    });

    expect(
      (await arm('DELETE', `${group}/providers/Microsoft.Compute/virtualMachines/vm1`, undefined, bearer))
        .status,
    ).toBe(202);
    await until('the VM to be gone', async () => azure.state().virtualMachines.length === 0);
    expect(azure.state()).toMatchObject({
      disks: [{ name: expect.stringMatching(/^vm1_OsDisk_1_/) }],
      networkInterfaces: [{ name: 'vm1-nic' }],
      publicIpAddresses: [{ name: 'vm1-pip' }],
    });
    expect(
      (await arm('DELETE', `${group}/providers/Microsoft.Compute/virtualMachines/vm1`, undefined, bearer))
        .status,
    ).toBe(204);
  });
});
