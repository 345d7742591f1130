/**
 * The Lambda Cloud emulator: one loopback server answering Lambda's REST API (its OpenAPI
 * document, `https://cloud.lambdalabs.com/api/v1`) so a backend's real HTTP client runs unchanged
 * against it. `apiUrl` is the API root (`http://127.0.0.1:<port>/api/v1`); `url` the server's,
 * where the control routes (`/_emulator/state`, `/_emulator/faults`) are.
 *
 *   GET  /instance-types                 `{data: {<name>: {instance_type, regions_with_capacity_available}}}`
 *   GET  /images                         `{data: [{id, name, family, architecture, region}]}`, per region
 *   POST /instance-operations/launch     `{data: {instance_ids}}`; capacity and quota refusals as Lambda's
 *   POST /instance-operations/terminate  `{data: {terminated_instances}}`; an unknown id is 404 `global/object-does-not-exist`
 *   GET  /instances, GET /instances/{id} the account's instances (`booting` → `active` → `terminating` → gone)
 *   GET|POST /ssh-keys, DELETE /ssh-keys/{id}
 *
 * The API key goes as `Authorization: Bearer <key>` (or as Basic auth's user); anything else is
 * 401 `global/invalid-api-key`. Errors come in Lambda's `{"error": {code, message, suggestion}}`.
 *
 * With `hosts`, a launched instance boots a real host of Lambda's stock image (Ubuntu with Docker,
 * the `ubuntu` user with passwordless sudo) that has the launch's SSH keys authorized, and nothing
 * else: Lambda runs no user data, so the backend must log in to start anything. The instance is
 * `active`, with the host's address as `ip`, once the host's sshd is up. Without hosts, instances
 * get made-up loopback addresses nobody answers on.
 */
import { randomBytes } from 'node:crypto';
import type { BackendEmulator } from '../../conformance/test-backend-options.js';
import { EmulatorHttpError, type EmulatorResponse, json } from '../../emulator/emulator-responses.js';
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
  DEFAULT_LAMBDA_INSTANCE_TYPES,
  DEFAULT_LAMBDA_REGIONS,
  type LambdaInstanceTypeSpec,
} from './lambda-emulator-data.js';
import {
  type ActiveLambdaFault,
  LambdaEmulatorFaults,
  type LambdaFault,
  parseLambdaFault,
} from './lambda-emulator-faults.js';

/** The emulator's API key unless told otherwise. */
export const DEFAULT_LAMBDA_EMULATOR_API_KEY = 'secret_lambda-emulator_0123456789abcdef';

export interface LambdaEmulatorTimeline {
  /** How long an instance stays `booting` at least (with hosts, also until its host is up). Default 500. */
  bootingMs: number;
  /** How long a terminated instance stays `terminating` before Lambda forgets it. Default 500. */
  terminatingMs: number;
}

export const DEFAULT_LAMBDA_EMULATOR_TIMELINE: LambdaEmulatorTimeline = {
  bootingMs: 500,
  terminatingMs: 500,
};

export interface LambdaEmulatorOptions {
  host?: string;
  port?: number;
  apiKey?: string;
  instanceTypes?: readonly LambdaInstanceTypeSpec[];
  regions?: readonly { readonly name: string; readonly description: string }[];
  /** Where instances boot (`DockerEmulatedHosts`); without, made-up addresses. */
  hosts?: EmulatedHosts;
  timeline?: Partial<LambdaEmulatorTimeline>;
  faults?: readonly LambdaFault[];
}

type LambdaStatus = 'booting' | 'active' | 'unhealthy' | 'terminating' | 'terminated';

interface EmulatedInstance {
  readonly id: string;
  readonly name: string | null;
  readonly type: LambdaInstanceTypeSpec;
  readonly region: { name: string; description: string };
  readonly sshKeyNames: string[];
  readonly launchedAt: number;
  /** Its host, with hosts. */
  host: EmulatedInstanceHost | undefined;
  terminatedAt: number | null;
  readonly madeUpIp: string;
}

export interface LambdaEmulatorInstanceState {
  readonly id: string;
  readonly name: string | null;
  readonly status: LambdaStatus;
  readonly instanceType: string;
  readonly region: string;
  readonly ip: string | null;
  readonly sshKeyNames: readonly string[];
}

export interface LambdaEmulatorState {
  readonly provider: 'lambda';
  /** Instances Lambda still lists (terminated ones are forgotten once `terminatingMs` passed). */
  readonly instances: readonly LambdaEmulatorInstanceState[];
  readonly sshKeys: readonly { id: string; name: string }[];
}

export interface LambdaEmulator extends BackendEmulator {
  /** The server's root, `http://127.0.0.1:<port>` (the control routes). */
  readonly url: string;
  /** Lambda's API root on it, `http://127.0.0.1:<port>/api/v1`: a backend's `endpoint_url`. */
  readonly apiUrl: string;
  readonly apiKey: string;
  readonly regions: readonly string[];
  readonly server: EmulatorServer;
  addFault(fault: LambdaFault): ActiveLambdaFault;
  removeFault(id: string): boolean;
  clearFaults(): void;
  faults(): readonly ActiveLambdaFault[];
  /** Lambda has no capacity for `instanceType` in `region` (or anywhere) in `GET /instance-types`, until restored. */
  setCapacity(instanceType: string, regions: readonly string[] | null): void;
  failNextLaunchWithNoCapacity(count?: number): void;
  removeInstance(instanceId: string): Promise<void>;
  launchedMachineCount(): number;
  state(): LambdaEmulatorState;
  close(): Promise<void>;
}

/** Lambda's error envelope as an HTTP error. */
function lambdaError(status: number, code: string, message: string, suggestion?: string): EmulatorHttpError {
  return new EmulatorHttpError(
    json({ error: { code, message, ...(suggestion ? { suggestion } : {}) } }, status),
  );
}

const invalidParameters = (message: string) => lambdaError(400, 'global/invalid-parameters', message);

export async function startLambdaEmulator(options: LambdaEmulatorOptions = {}): Promise<LambdaEmulator> {
  const apiKey = options.apiKey ?? DEFAULT_LAMBDA_EMULATOR_API_KEY;
  const timeline = { ...DEFAULT_LAMBDA_EMULATOR_TIMELINE, ...options.timeline };
  const types = options.instanceTypes ?? DEFAULT_LAMBDA_INSTANCE_TYPES;
  const regions = options.regions ?? DEFAULT_LAMBDA_REGIONS;
  const hosts = options.hosts;
  const faults = new LambdaEmulatorFaults();
  for (const fault of options.faults ?? []) faults.add(fault);
  /** Regions with capacity per type; absent: every region. */
  const capacity = new Map<string, readonly string[]>();
  const instances = new Map<string, EmulatedInstance>();
  const sshKeys = new Map<string, { id: string; name: string; public_key: string }>();
  let launched = 0;

  function status(instance: EmulatedInstance, now = Date.now()): LambdaStatus | 'gone' {
    if (instance.terminatedAt !== null) {
      return now - instance.terminatedAt >= timeline.terminatingMs ? 'gone' : 'terminating';
    }
    if (instance.host?.status === 'failed') return 'unhealthy';
    const booted = now - instance.launchedAt >= timeline.bootingMs;
    if (instance.host) return booted && instance.host.status === 'up' ? 'active' : 'booting';
    return booted ? 'active' : 'booting';
  }

  function ipOf(instance: EmulatedInstance): string | null {
    if (status(instance) !== 'active') return null;
    return instance.host?.address ?? instance.madeUpIp;
  }

  /** Live instances; forgotten ones are dropped here. */
  function live(): EmulatedInstance[] {
    for (const instance of [...instances.values()])
      if (status(instance) === 'gone') instances.delete(instance.id);
    return [...instances.values()];
  }

  function view(instance: EmulatedInstance): Record<string, unknown> {
    const ip = ipOf(instance);
    return {
      id: instance.id,
      name: instance.name,
      ip,
      private_ip: ip,
      status: status(instance),
      ssh_key_names: instance.sshKeyNames,
      file_system_names: [],
      region: instance.region,
      instance_type: instance.type,
      hostname: ip === null ? null : `${ip.replaceAll('.', '-')}.cloud.lambdalabs.com`,
      jupyter_token: null,
      jupyter_url: null,
      is_reserved: false,
    };
  }

  function authenticate(request: EmulatorRequest): void {
    if (faults.fire('INVALID_API_KEY')) throw unauthorized();
    const header = String(request.headers.authorization ?? '').trim();
    let key = /^Bearer\s+(.+)$/i.exec(header)?.[1];
    const basic = /^Basic\s+(.+)$/i.exec(header)?.[1];
    if (basic) key = Buffer.from(basic, 'base64').toString('utf8').split(':')[0];
    if (key !== apiKey) throw unauthorized();
  }

  function unauthorized(): EmulatorHttpError {
    return lambdaError(
      401,
      'global/invalid-api-key',
      'API key was invalid, expired, or deleted.',
      'Check your API key or create a new one, then try again.',
    );
  }

  function apiRoute(
    method: string,
    path: string,
    handle: (request: EmulatorRequest) => EmulatorResponse | Promise<EmulatorResponse>,
    isLaunch = false,
  ): EmulatorRoute {
    return {
      name: `${method} ${path}`,
      method,
      path: `/api/v1${path}`,
      handle: (request) => {
        authenticate(request);
        if (faults.fire('RATE_LIMITED', isLaunch ? { launch: { instanceType: '', region: '' } } : {})) {
          throw lambdaError(429, 'global/too-many-requests', 'Too many requests.', 'Wait and try again.');
        }
        return handle(request);
      },
    };
  }

  function bodyOf(request: EmulatorRequest): Record<string, unknown> {
    const body = request.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw invalidParameters('The request body must be a JSON object.');
    }
    return body as Record<string, unknown>;
  }

  function launch(request: EmulatorRequest): EmulatorResponse {
    const body = bodyOf(request);
    const type = types.find((each) => each.name === body.instance_type_name);
    if (!type)
      throw invalidParameters(
        `instance_type_name: unknown instance type ${JSON.stringify(body.instance_type_name)}.`,
      );
    const region = regions.find((each) => each.name === body.region_name);
    if (!region) throw invalidParameters(`region_name: unknown region ${JSON.stringify(body.region_name)}.`);
    const keyNames = body.ssh_key_names;
    if (!Array.isArray(keyNames) || keyNames.length !== 1 || typeof keyNames[0] !== 'string') {
      throw invalidParameters('ssh_key_names: exactly one SSH key name is required.');
    }
    const key = [...sshKeys.values()].find((each) => each.name === keyNames[0]);
    if (!key)
      throw lambdaError(404, 'global/object-does-not-exist', `SSH key ${keyNames[0]} does not exist.`);
    if (
      body.file_system_names !== undefined &&
      (!Array.isArray(body.file_system_names) || body.file_system_names.length > 0)
    ) {
      throw invalidParameters('file_system_names: the emulator has no file systems.');
    }
    const quantity = body.quantity ?? 1;
    if (quantity !== 1) throw invalidParameters('quantity: the emulator launches one instance at a time.');
    const name = body.name ?? null;
    if (name !== null && (typeof name !== 'string' || name.length > 64)) {
      throw invalidParameters('name: a string of at most 64 characters.');
    }
    const target = { launch: { instanceType: type.name, region: region.name } };
    if (faults.fire('INSUFFICIENT_CAPACITY', target) || !hasCapacity(type.name, region.name)) {
      throw lambdaError(
        400,
        'instance-operations/launch/insufficient-capacity',
        'Not enough capacity to fulfill launch request.',
        'Choose an instance type with more availability, or try again later.',
      );
    }
    if (faults.fire('QUOTA_EXCEEDED', target)) {
      throw lambdaError(
        400,
        'global/quota-exceeded',
        'Quota exceeded.',
        'Contact Support to increase your quota.',
      );
    }
    launched += 1;
    const instance: EmulatedInstance = {
      id: randomBytes(16).toString('hex'),
      name,
      type,
      region,
      sshKeyNames: [key.name],
      launchedAt: Date.now(),
      host: undefined,
      terminatedAt: null,
      madeUpIp: madeUpAddress('127.77', launched),
    };
    instances.set(instance.id, instance);
    if (hosts) bootHost(hosts, instance, key.public_key);
    return json({ data: { instance_ids: [instance.id] } });
  }

  /** The host gets the key as Lambda's image does (cloud-init gives it to `ubuntu`), nothing else. */
  function bootHost(hosts: EmulatedHosts, instance: EmulatedInstance, publicKey: string): void {
    const keysOnly = `#cloud-config\nssh_authorized_keys:\n  - ${JSON.stringify(publicKey.trim())}\n`;
    instance.host = new EmulatedInstanceHost(
      hosts,
      { instanceId: instance.id, userData: keysOnly, kind: 'docker' },
      (error) => console.error(`Lambda emulator: host of ${instance.id} failed: ${String(error)}`),
    );
  }

  function hasCapacity(type: string, region: string): boolean {
    const regionsWithCapacity = capacity.get(type);
    return regionsWithCapacity === undefined || regionsWithCapacity.includes(region);
  }

  async function stopHost(instance: EmulatedInstance): Promise<void> {
    await instance.host?.stop();
  }

  function terminate(request: EmulatorRequest): EmulatorResponse {
    const ids = bodyOf(request).instance_ids;
    if (!Array.isArray(ids) || ids.length === 0)
      throw invalidParameters('instance_ids: a non-empty list is required.');
    live();
    const found = ids.map((id) => instances.get(String(id)));
    const missing = ids.find((_, index) => found[index] === undefined);
    if (missing !== undefined) {
      throw lambdaError(404, 'global/object-does-not-exist', `Instance ${missing} does not exist.`);
    }
    const now = Date.now();
    for (const instance of found as EmulatedInstance[]) {
      if (instance.terminatedAt !== null) continue;
      instance.terminatedAt = now;
      void stopHost(instance).catch((error: unknown) =>
        console.error(`Lambda emulator: cannot stop the host of ${instance.id}: ${String(error)}`),
      );
    }
    return json({ data: { terminated_instances: (found as EmulatedInstance[]).map(view) } });
  }

  const state = (): LambdaEmulatorState => ({
    provider: 'lambda',
    instances: live().map((instance) => ({
      id: instance.id,
      name: instance.name,
      status: status(instance) as LambdaStatus,
      instanceType: instance.type.name,
      region: instance.region.name,
      ip: ipOf(instance),
      sshKeyNames: instance.sshKeyNames,
    })),
    sshKeys: [...sshKeys.values()].map(({ id, name }) => ({ id, name })),
  });

  const apiRoutes: EmulatorRoute[] = [
    apiRoute('GET', '/instance-types', () =>
      json({
        data: Object.fromEntries(
          types.map((type) => [
            type.name,
            {
              instance_type: type,
              regions_with_capacity_available: regions.filter((region) =>
                hasCapacity(type.name, region.name),
              ),
            },
          ]),
        ),
      }),
    ),
    apiRoute('GET', '/images', () =>
      json({
        data: regions.flatMap((region) =>
          ['x86_64', 'arm64'].map((architecture) => ({
            id: `lambda-stack-22-04-${architecture}-${region.name}`,
            name: 'lambda-stack-22-04',
            description: 'Lambda Stack 22.04 (Ubuntu with Docker and the NVIDIA stack)',
            family: 'lambda-stack',
            version: '22.04',
            architecture,
            region,
          })),
        ),
      }),
    ),
    apiRoute('POST', '/instance-operations/launch', launch, true),
    apiRoute('POST', '/instance-operations/terminate', terminate),
    apiRoute('GET', '/instances', () => json({ data: live().map(view) })),
    apiRoute('GET', '/instances/:id', (request) => {
      live();
      const instance = instances.get(request.params.id ?? '');
      if (!instance)
        throw lambdaError(404, 'global/object-does-not-exist', 'Specified instance does not exist.');
      return json({ data: view(instance) });
    }),
    apiRoute('GET', '/ssh-keys', () => json({ data: [...sshKeys.values()] })),
    apiRoute('POST', '/ssh-keys', (request) => {
      const body = bodyOf(request);
      if (typeof body.name !== 'string' || body.name === '') throw invalidParameters('name: required.');
      if ([...sshKeys.values()].some((key) => key.name === body.name)) {
        throw lambdaError(400, 'global/duplicate', `An SSH key named ${body.name} already exists.`);
      }
      if (typeof body.public_key !== 'string' || !/^ssh-\S+ \S+/.test(body.public_key.trim())) {
        // Lambda generates a key pair when none is given; dstack always gives one.
        throw invalidParameters('public_key: an OpenSSH public key is required.');
      }
      const key = {
        id: randomBytes(16).toString('hex'),
        name: body.name,
        public_key: body.public_key.trim(),
      };
      sshKeys.set(key.id, key);
      return json({ data: key });
    }),
    apiRoute('DELETE', '/ssh-keys/:id', (request) => {
      if (!sshKeys.delete(request.params.id ?? '')) {
        throw lambdaError(404, 'global/object-does-not-exist', 'Specified SSH key does not exist.');
      }
      return json({ data: {} });
    }),
  ];

  const server = await startEmulatorServer({
    host: options.host,
    port: options.port,
    routes: [...emulatorControlRoutes({ state, faults, parseFault: parseLambdaFault }), ...apiRoutes],
  });

  return {
    url: server.url,
    apiUrl: `${server.url}/api/v1`,
    apiKey,
    regions: regions.map((region) => region.name),
    server,
    addFault: (fault) => faults.add(fault),
    removeFault: (id) => faults.remove(id),
    clearFaults: () => faults.clear(),
    faults: () => faults.list(),
    setCapacity(instanceType, regionsWithCapacity) {
      if (regionsWithCapacity === null) capacity.delete(instanceType);
      else capacity.set(instanceType, [...regionsWithCapacity]);
    },
    failNextLaunchWithNoCapacity: (count = 1) => {
      faults.add({ code: 'INSUFFICIENT_CAPACITY', count });
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
