/**
 * The emulator of "Toy Cloud", a tiny REST provider, built with the toolkit:
 * bearer-token auth, instance types, instances that boot a real shim when
 * they start running, and the fault hooks `testBackend` uses.
 */
import type { BackendEmulator } from '../../conformance/test-backend-options.js';
import { bootLocalAgent, type LocalAgent } from '../../emulator/boot-local-agent.js';
import { EmulatorHttpError, empty, json } from '../../emulator/emulator-responses.js';
import {
  type EmulatorRequest,
  type EmulatorServer,
  startEmulatorServer,
} from '../../emulator/emulator-server.js';

export const TOY_CLOUD_TOKEN = 'toy-secret';

export const TOY_CLOUD_INSTANCE_TYPES = [
  { name: 'toy-4', cpus: 4, memory_gib: 16, price: 0.4, region: 'toy-east' },
  { name: 'toy-1', cpus: 1, memory_gib: 2, price: 0.05, region: 'toy-east' },
  { name: 'toy-2', cpus: 2, memory_gib: 8, price: 0.1, region: 'toy-west' },
];

interface ToyInstance {
  id: string;
  type: string;
  region: string;
  status: 'pending' | 'running';
  /** What the create request gave the instance's shim to require. */
  agentToken: string | null;
  agent: LocalAgent | undefined;
}

export interface ToyCloudEmulator extends BackendEmulator {
  readonly server: EmulatorServer;
  readonly url: string;
}

export async function startToyCloudEmulator(): Promise<ToyCloudEmulator> {
  const instances = new Map<string, ToyInstance>();
  /** Instance ids by the `client_token` they were created with: a repeated create returns the first. */
  const byClientToken = new Map<string, string>();
  let sequence = 0;
  const authorized = (request: EmulatorRequest) => {
    if (request.headers.authorization !== `Bearer ${TOY_CLOUD_TOKEN}`) {
      throw new EmulatorHttpError(json({ error: 'invalid_token' }, 401));
    }
  };
  const instanceOf = (request: EmulatorRequest) => {
    const instance = instances.get(request.params.id ?? '');
    if (!instance) throw new EmulatorHttpError(json({ error: 'not_found' }, 404));
    return instance;
  };
  const view = (instance: ToyInstance) => ({
    id: instance.id,
    type: instance.type,
    region: instance.region,
    status: instance.status,
    ip: instance.agent?.host ?? null,
    shim_port: instance.agent?.port ?? null,
  });

  const server = await startEmulatorServer({
    routes: [
      {
        name: 'account',
        method: 'GET',
        path: '/v1/account',
        handle: (request) => {
          authorized(request);
          return json({ name: 'toy-user' });
        },
      },
      {
        name: 'listTypes',
        method: 'GET',
        path: '/v1/instance-types',
        handle: (request) => {
          authorized(request);
          return json({ instance_types: TOY_CLOUD_INSTANCE_TYPES });
        },
      },
      {
        name: 'createInstance',
        method: 'POST',
        path: '/v1/instances',
        handle: (request) => {
          authorized(request);
          const { type, region, client_token, agent_token } = request.body as {
            type: string;
            region: string;
            client_token?: string;
            agent_token?: string;
          };
          const existing = instances.get(byClientToken.get(client_token ?? '') ?? '');
          if (existing) return json(view(existing), 200);
          sequence += 1;
          const instance: ToyInstance = {
            id: `toy-${sequence}`,
            type,
            region,
            status: 'pending',
            agentToken: agent_token ?? null,
            agent: undefined,
          };
          instances.set(instance.id, instance);
          if (client_token) byClientToken.set(client_token, instance.id);
          return json(view(instance), 201);
        },
      },
      {
        name: 'getInstance',
        method: 'GET',
        path: '/v1/instances/:id',
        handle: async (request) => {
          authorized(request);
          const instance = instanceOf(request);
          // The instance "boots" on the first look after creation: the real shim starts here.
          if (instance.status === 'pending') {
            instance.agent = await bootLocalAgent({ kind: 'vm', token: instance.agentToken });
            instance.status = 'running';
          }
          return json(view(instance));
        },
      },
      {
        name: 'deleteInstance',
        method: 'DELETE',
        path: '/v1/instances/:id',
        handle: async (request) => {
          authorized(request);
          const instance = instanceOf(request);
          instances.delete(instance.id);
          await instance.agent?.stop();
          return empty();
        },
      },
    ],
  });

  return {
    server,
    url: server.url,
    failNextLaunchWithNoCapacity: (count = 1) =>
      server.failNext('createInstance', json({ error: 'insufficient_capacity' }, 409), count),
    async removeInstance(instanceId) {
      const instance = instances.get(instanceId);
      instances.delete(instanceId);
      await instance?.agent?.stop();
    },
    agentOf: (instanceId) => instances.get(instanceId)?.agent,
    launchedMachineCount: () => sequence,
    async close() {
      await Promise.all([...instances.values()].map((instance) => instance.agent?.stop()));
      await server.close();
    },
  };
}
