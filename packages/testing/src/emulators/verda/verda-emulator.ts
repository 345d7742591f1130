/**
 * The Verda (formerly DataCrunch) emulator: one loopback server answering Verda's REST API as
 * `https://api.verda.com/v1` does for its Python SDK, so a backend's real HTTP client runs
 * unchanged against it. `apiUrl` is the API root (`http://127.0.0.1:<port>/v1`).
 *
 *   POST /v1/oauth2/token            client_credentials (and refresh_token) grants: `{access_token, refresh_token, expires_in, token_type, scope}`
 *   GET  /v1/instance-types, /v1/locations, /v1/instance-availability?isSpot=
 *   GET|POST|DELETE /v1/sshkeys, /v1/scripts   (POST answers the new id as text; DELETE takes `{keys}` / `{scripts}`)
 *   POST /v1/instances               deploy: the new id as text
 *   GET  /v1/instances, /v1/instances/{id}   `ordered` → `provisioning` → `running` (with `ip`)
 *   PUT  /v1/instances               `{action: "delete", id: [...]}`: `deleting` → `discontinued`, then forgotten
 *
 * Calls but the token's carry `Authorization: Bearer <access_token>`; errors are Verda's
 * `{"code", "message"}`. With `hosts`, a deployed instance boots a host of Verda's Ubuntu + CUDA +
 * Docker image: the deploy's SSH keys are root's (Verda logs in as root), and its startup script
 * runs as root at first boot. Without hosts, instances get made-up loopback addresses.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { stringify } from 'yaml';
import type { BackendEmulator } from '../../conformance/test-backend-options.js';
import { EmulatorHttpError, type EmulatorResponse, json, text } from '../../emulator/emulator-responses.js';
import {
  type EmulatorRequest,
  type EmulatorRoute,
  type EmulatorServer,
  startEmulatorServer,
} from '../../emulator/emulator-server.js';
import type { EmulatedHosts } from '../emulated-hosts.js';
import { controlError, emulatorControlRoutes } from '../emulator-control-routes.js';
import { EmulatedInstanceHost } from '../instance-host.js';
import { madeUpAddress } from '../made-up-address.js';
import {
  DEFAULT_VERDA_INSTANCE_TYPES,
  DEFAULT_VERDA_LOCATIONS,
  type VerdaInstanceTypeSpec,
} from './verda-emulator-data.js';
import {
  type ActiveVerdaFault,
  parseVerdaFault,
  VerdaEmulatorFaults,
  type VerdaFault,
} from './verda-emulator-faults.js';

export const DEFAULT_VERDA_EMULATOR_CLIENT = {
  clientId: 'verda-emulator-client',
  clientSecret: 'verda-emulator-secret-0123456789abcdef',
} as const;

export interface VerdaEmulatorTimeline {
  /** `ordered` → `provisioning` after this. Default 200. */
  orderedMs: number;
  /** `provisioning` → `running` after this more (with hosts, also not before the host is up). Default 300. */
  provisioningMs: number;
  /** `deleting` → `discontinued` after this; forgotten as long again after. Default 300. */
  deletingMs: number;
}

export const DEFAULT_VERDA_EMULATOR_TIMELINE: VerdaEmulatorTimeline = {
  orderedMs: 200,
  provisioningMs: 300,
  deletingMs: 300,
};

export interface VerdaEmulatorOptions {
  host?: string;
  port?: number;
  client?: { clientId: string; clientSecret: string };
  instanceTypes?: readonly VerdaInstanceTypeSpec[];
  locations?: readonly { code: string; name: string; country_code: string }[];
  hosts?: EmulatedHosts;
  timeline?: Partial<VerdaEmulatorTimeline>;
  faults?: readonly VerdaFault[];
  /** Access tokens' lifetime in seconds. Default 3600. */
  tokenLifetimeSeconds?: number;
}

type VerdaStatus = 'ordered' | 'provisioning' | 'running' | 'deleting' | 'discontinued' | 'error';

interface EmulatedInstance {
  readonly id: string;
  readonly request: Record<string, unknown>;
  readonly type: VerdaInstanceTypeSpec;
  readonly location: string;
  readonly createdAt: number;
  /** Its host, with hosts. */
  host: EmulatedInstanceHost | undefined;
  deletedAt: number | null;
  readonly madeUpIp: string;
}

export interface VerdaEmulatorState {
  readonly provider: 'verda';
  readonly instances: readonly {
    id: string;
    hostname: string;
    status: VerdaStatus;
    instanceType: string;
    location: string;
    isSpot: boolean;
    ip: string | null;
  }[];
  readonly sshKeys: readonly { id: string; name: string }[];
  readonly startupScripts: readonly { id: string; name: string }[];
}

export interface VerdaEmulator extends BackendEmulator {
  readonly url: string;
  /** The API root, `http://127.0.0.1:<port>/v1`: a backend's `endpoint_url`. */
  readonly apiUrl: string;
  readonly client: { clientId: string; clientSecret: string };
  readonly regions: readonly string[];
  readonly server: EmulatorServer;
  addFault(fault: VerdaFault): ActiveVerdaFault;
  removeFault(id: string): boolean;
  clearFaults(): void;
  faults(): readonly ActiveVerdaFault[];
  failNextLaunchWithNoCapacity(count?: number): void;
  removeInstance(instanceId: string): Promise<void>;
  launchedMachineCount(): number;
  state(): VerdaEmulatorState;
  close(): Promise<void>;
}

function verdaError(status: number, code: string, message: string): EmulatorHttpError {
  return new EmulatorHttpError(json({ code, message }, status));
}
const invalidRequest = (message: string) => verdaError(400, 'invalid_request', message);

export async function startVerdaEmulator(options: VerdaEmulatorOptions = {}): Promise<VerdaEmulator> {
  const client = options.client ?? DEFAULT_VERDA_EMULATOR_CLIENT;
  const timeline = { ...DEFAULT_VERDA_EMULATOR_TIMELINE, ...options.timeline };
  const types = options.instanceTypes ?? DEFAULT_VERDA_INSTANCE_TYPES;
  const locations = options.locations ?? DEFAULT_VERDA_LOCATIONS;
  const hosts = options.hosts;
  const lifetime = options.tokenLifetimeSeconds ?? 3600;
  const faults = new VerdaEmulatorFaults();
  for (const fault of options.faults ?? []) faults.add(fault);
  const tokens = new Map<string, number>();
  const refreshTokens = new Set<string>();
  const instances = new Map<string, EmulatedInstance>();
  const sshKeys = new Map<string, { id: string; name: string; key: string }>();
  const scripts = new Map<string, { id: string; name: string; script: string }>();
  let launched = 0;

  function status(instance: EmulatedInstance, now = Date.now()): VerdaStatus | 'gone' {
    if (instance.deletedAt !== null) {
      const since = now - instance.deletedAt;
      if (since >= 2 * timeline.deletingMs) return 'gone';
      return since >= timeline.deletingMs ? 'discontinued' : 'deleting';
    }
    if (instance.host?.status === 'failed') return 'error';
    const age = now - instance.createdAt;
    if (age < timeline.orderedMs) return 'ordered';
    const booted = age >= timeline.orderedMs + timeline.provisioningMs;
    if (instance.host) return booted && instance.host.status === 'up' ? 'running' : 'provisioning';
    return booted ? 'running' : 'provisioning';
  }

  function live(): EmulatedInstance[] {
    for (const instance of [...instances.values()])
      if (status(instance) === 'gone') instances.delete(instance.id);
    return [...instances.values()];
  }

  function ipOf(instance: EmulatedInstance): string | null {
    if (status(instance) !== 'running') return null;
    return instance.host?.address ?? instance.madeUpIp;
  }

  function view(instance: EmulatedInstance): Record<string, unknown> {
    const { request, type } = instance;
    return {
      id: instance.id,
      instance_type: type.instance_type,
      image: request.image,
      price_per_hour: Number(request.is_spot ? type.spot_price : type.price_per_hour),
      hostname: request.hostname,
      description: request.description,
      ip: ipOf(instance),
      status: status(instance),
      created_at: new Date(instance.createdAt).toISOString(),
      ssh_key_ids: request.ssh_key_ids,
      startup_script_id: request.startup_script_id ?? null,
      cpu: type.cpu,
      gpu: type.gpu,
      memory: type.memory,
      gpu_memory: type.gpu_memory,
      storage: type.storage,
      location: instance.location,
      is_spot: request.is_spot === true,
      os_volume_id: `vol-${instance.id.slice(0, 8)}`,
    };
  }

  function bodyOf(request: EmulatorRequest): Record<string, unknown> {
    if (typeof request.body !== 'object' || request.body === null || Array.isArray(request.body)) {
      throw invalidRequest('The request body must be a JSON object');
    }
    return request.body as Record<string, unknown>;
  }

  function issueToken(): EmulatorResponse {
    const accessToken = randomBytes(24).toString('hex');
    const refreshToken = randomBytes(24).toString('hex');
    tokens.set(accessToken, Date.now() + lifetime * 1000);
    refreshTokens.add(refreshToken);
    return json({
      access_token: accessToken,
      refresh_token: refreshToken,
      scope: 'cloud-api-v1',
      token_type: 'Bearer',
      expires_in: lifetime,
    });
  }

  function token(request: EmulatorRequest): EmulatorResponse {
    if (faults.fire('INVALID_CREDENTIALS'))
      throw verdaError(401, 'unauthorized_request', 'Invalid client credentials');
    const body = bodyOf(request);
    if (body.grant_type === 'refresh_token') {
      if (typeof body.refresh_token !== 'string' || !refreshTokens.delete(body.refresh_token)) {
        throw verdaError(401, 'unauthorized_request', 'Invalid refresh token');
      }
      return issueToken();
    }
    if (body.grant_type !== 'client_credentials')
      throw invalidRequest('grant_type: client_credentials or refresh_token');
    if (body.client_id !== client.clientId || body.client_secret !== client.clientSecret) {
      throw verdaError(401, 'unauthorized_request', 'Invalid client id or client secret');
    }
    return issueToken();
  }

  function authenticate(request: EmulatorRequest): void {
    const bearer = /^Bearer\s+(.+)$/i.exec(String(request.headers.authorization ?? '').trim())?.[1];
    const expiresAt = bearer === undefined ? undefined : tokens.get(bearer);
    if (expiresAt === undefined || expiresAt <= Date.now() || faults.fire('INVALID_CREDENTIALS')) {
      throw verdaError(401, 'unauthorized_request', 'Invalid or expired access token');
    }
  }

  function apiRoute(
    method: string,
    path: string,
    handle: (request: EmulatorRequest) => EmulatorResponse | Promise<EmulatorResponse>,
  ): EmulatorRoute {
    return {
      name: `${method} ${path}`,
      method,
      path: `/v1${path}`,
      handle: (request) => {
        if (faults.fire('RATE_LIMITED')) throw verdaError(429, 'too_many_requests', 'Too many requests');
        authenticate(request);
        return handle(request);
      },
    };
  }

  function idList(body: Record<string, unknown>, field: string): string[] {
    const ids = body[field];
    if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string'))
      throw invalidRequest(`${field}: a list of ids`);
    return ids as string[];
  }

  function deploy(request: EmulatorRequest): EmulatorResponse {
    const body = bodyOf(request);
    const type = types.find((each) => each.instance_type === body.instance_type);
    if (!type) throw invalidRequest('Invalid instance type');
    const location = locations.find((each) => each.code === body.location_code)?.code;
    if (!location) throw invalidRequest('Invalid location code');
    if (typeof body.image !== 'string' || body.image === '') throw invalidRequest('image: required');
    if (typeof body.hostname !== 'string' || body.hostname === '') throw invalidRequest('hostname: required');
    const keyIds = idList(body, 'ssh_key_ids');
    if (keyIds.some((id) => !sshKeys.has(id))) throw invalidRequest('Invalid ssh key id');
    const scriptId = body.startup_script_id;
    if (scriptId != null && (typeof scriptId !== 'string' || !scripts.has(scriptId))) {
      throw invalidRequest('Invalid startup script id');
    }
    const volume = body.os_volume as { size?: unknown } | undefined;
    if (volume !== undefined && (typeof volume.size !== 'number' || volume.size < 50)) {
      throw invalidRequest('os_volume.size: at least 50 GB');
    }
    const target = { instanceType: type.instance_type, location };
    if (faults.fire('NO_CAPACITY', target))
      throw invalidRequest('Not enough resources available for this instance type');
    if (faults.fire('INSUFFICIENT_FUNDS', target))
      throw verdaError(402, 'insufficient_funds', 'Insufficient funds');
    launched += 1;
    const instance: EmulatedInstance = {
      id: randomUUID(),
      request: body,
      type,
      location,
      createdAt: Date.now(),
      host: undefined,
      deletedAt: null,
      madeUpIp: madeUpAddress('127.78', launched),
    };
    instances.set(instance.id, instance);
    if (hosts)
      bootHost(
        hosts,
        instance,
        keyIds,
        typeof scriptId === 'string' ? scripts.get(scriptId)?.script : undefined,
      );
    return text(instance.id);
  }

  /** Root gets the deploy's keys and runs its startup script at first boot, as on Verda's images. */
  function bootHost(
    hosts: EmulatedHosts,
    instance: EmulatedInstance,
    keyIds: string[],
    script: string | undefined,
  ): void {
    const authorizedKeys = keyIds.map((id) => sshKeys.get(id)?.key ?? '').join('\n');
    const files = [
      { path: '/root/.ssh/authorized_keys', content: `${authorizedKeys}\n`, permissions: '0600' },
    ];
    if (script !== undefined)
      files.push({ path: '/var/lib/verda/startup-script', content: script, permissions: '0700' });
    const userData = `#cloud-config\n${stringify({
      write_files: files,
      ...(script !== undefined ? { runcmd: ['/var/lib/verda/startup-script'] } : {}),
    })}`;
    instance.host = new EmulatedInstanceHost(
      hosts,
      { instanceId: instance.id, userData, kind: 'docker' },
      (error) => console.error(`Verda emulator: host of ${instance.id} failed: ${String(error)}`),
    );
  }

  async function stopHost(instance: EmulatedInstance): Promise<void> {
    await instance.host?.stop();
  }

  function instanceAction(request: EmulatorRequest): EmulatorResponse {
    const body = bodyOf(request);
    if (body.action !== 'delete') throw invalidRequest('action: the emulator performs delete only');
    const ids = idList(body, 'id');
    live();
    for (const id of ids) {
      const instance = instances.get(id);
      if (!instance) throw invalidRequest('Invalid instance id');
      const current = status(instance);
      if (current === 'discontinued' || current === 'deleting')
        throw invalidRequest("Can't discontinue a discontinued instance");
      if (current === 'ordered') throw invalidRequest("Can't discontinue a provisioning instance");
    }
    for (const id of ids) {
      const instance = instances.get(id) as EmulatedInstance;
      instance.deletedAt = Date.now();
      void stopHost(instance).catch((error: unknown) =>
        console.error(`Verda emulator: cannot stop the host of ${id}: ${String(error)}`),
      );
    }
    return text('', 202);
  }

  const state = (): VerdaEmulatorState => ({
    provider: 'verda',
    instances: live().map((instance) => ({
      id: instance.id,
      hostname: String(instance.request.hostname),
      status: status(instance) as VerdaStatus,
      instanceType: instance.type.instance_type,
      location: instance.location,
      isSpot: instance.request.is_spot === true,
      ip: ipOf(instance),
    })),
    sshKeys: [...sshKeys.values()].map(({ id, name }) => ({ id, name })),
    startupScripts: [...scripts.values()].map(({ id, name }) => ({ id, name })),
  });

  const routes: EmulatorRoute[] = [
    ...emulatorControlRoutes({ state, faults, parseFault: parseVerdaFault }),
    { name: 'POST /oauth2/token', method: 'POST', path: '/v1/oauth2/token', handle: token },
    apiRoute('GET', '/instance-types', () => json(types)),
    apiRoute('GET', '/locations', () => json(locations)),
    apiRoute('GET', '/instance-availability', (request) => {
      const spot = request.query.isSpot === 'true';
      return json(
        locations.map((location) => ({
          location_code: location.code,
          // Every type can launch on demand; spot capacity lacks the 8-GPU machines.
          availabilities: types
            .filter((type) => !spot || type.gpu.number_of_gpus < 8)
            .map((type) => type.instance_type),
        })),
      );
    }),
    apiRoute('GET', '/sshkeys', () => json([...sshKeys.values()])),
    apiRoute('POST', '/sshkeys', (request) => {
      const body = bodyOf(request);
      if (typeof body.name !== 'string' || typeof body.key !== 'string' || !/^ssh-\S+ \S+/.test(body.key)) {
        throw invalidRequest('name and key (an OpenSSH public key) are required');
      }
      const key = { id: randomUUID(), name: body.name, key: body.key };
      sshKeys.set(key.id, key);
      return text(key.id, 201);
    }),
    apiRoute('DELETE', '/sshkeys', (request) => {
      for (const id of idList(bodyOf(request), 'keys')) sshKeys.delete(id);
      return text('', 200);
    }),
    apiRoute('GET', '/scripts', () => json([...scripts.values()])),
    apiRoute('POST', '/scripts', (request) => {
      const body = bodyOf(request);
      if (typeof body.name !== 'string' || typeof body.script !== 'string')
        throw invalidRequest('name and script are required');
      const script = { id: randomUUID(), name: body.name, script: body.script };
      scripts.set(script.id, script);
      return text(script.id, 201);
    }),
    apiRoute('DELETE', '/scripts', (request) => {
      for (const id of idList(bodyOf(request), 'scripts')) scripts.delete(id);
      return text('', 200);
    }),
    apiRoute('POST', '/instances', deploy),
    apiRoute('GET', '/instances', () => json(live().map(view))),
    apiRoute('GET', '/instances/:id', (request) => {
      live();
      const instance = instances.get(request.params.id ?? '');
      if (!instance) throw invalidRequest('Invalid instance id');
      return json(view(instance));
    }),
    apiRoute('PUT', '/instances', instanceAction),
  ];

  const server = await startEmulatorServer({ host: options.host, port: options.port, routes });

  return {
    url: server.url,
    apiUrl: `${server.url}/v1`,
    client,
    regions: locations.map((location) => location.code),
    server,
    addFault: (fault) => faults.add(fault),
    removeFault: (id) => faults.remove(id),
    clearFaults: () => faults.clear(),
    faults: () => faults.list(),
    failNextLaunchWithNoCapacity: (count = 1) => {
      faults.add({ code: 'NO_CAPACITY', count });
    },
    async removeInstance(instanceId) {
      const instance = instances.get(instanceId);
      if (!instance) throw controlError(new Error(`no instance ${instanceId}`));
      instances.delete(instanceId);
      await stopHost(instance);
    },
    launchedMachineCount: () => launched,
    state,
    async close() {
      await server.close();
      await Promise.all([...instances.values()].map((instance) => stopHost(instance).catch(() => undefined)));
      instances.clear();
    },
  };
}
