/**
 * The RunPod emulator: one loopback server answering RunPod's GraphQL API as
 * `https://api.runpod.io/graphql` does, so a backend's real HTTP client runs unchanged against
 * it, and serving the catalog gpuhunt publishes for RunPod.
 *
 *   POST /graphql          `{query, variables}`; `?api_key=` or `Authorization: Bearer`. The
 *                          catalog fields (`gpuTypes`, `dataCenters`, `countryCodes`,
 *                          `cpuFlavors`) need no key; anything else without the account's key
 *                          is 401. A query that does not parse or validate is 400; a resolver's
 *                          error (no capacity, unknown pod) is in `errors` with HTTP 200.
 *   GET  /_emulator/catalog/{provider}/version, /{provider}/{version}/catalog.zip
 *                          gpuhunt's v3 layout: `runpod` from the emulator's stock, the other
 *                          providers from the bundled snapshot (`catalogUrl`).
 *
 * Beside the API: `/_emulator/state`, `/_emulator/faults`, `POST /_emulator/pods/{id}/interrupt`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { CatalogItem } from '@dstack/catalog';
import type { BackendEmulator } from '../../conformance/test-backend-options.js';
import { type EmulatorResponse, json, text } from '../../emulator/emulator-responses.js';
import {
  type EmulatorRequest,
  type EmulatorServer,
  startEmulatorServer,
} from '../../emulator/emulator-server.js';
import { controlError, emulatorControlRoutes } from '../emulator-control-routes.js';
import type { RentalContainers } from '../hosts/docker-rental-containers.js';
import { publishRunpodCatalogBucket, runpodCatalogItems } from './runpod-emulator-catalog.js';
import { DEFAULT_RUNPOD_EMULATOR_DATA, type RunpodEmulatorData } from './runpod-emulator-data.js';
import {
  type ActiveRunpodFault,
  DEFAULT_RUNPOD_SLOW_RESPONSE_MS,
  parseRunpodFault,
  RunpodEmulatorFaults,
  type RunpodFault,
} from './runpod-emulator-faults.js';
import {
  parseRunpodGraphqlRequest,
  RUNPOD_PUBLIC_FIELDS,
  RunpodGraphqlApi,
  RunpodGraphqlRequestError,
} from './runpod-graphql-api.js';
import { RunpodPods } from './runpod-pods.js';
import { RunpodStock } from './runpod-stock.js';

/** The emulator's API key unless told otherwise. */
export const DEFAULT_RUNPOD_EMULATOR_API_KEY = 'rpa_EMULATOR0123456789ABCDEFGHIJKLMNOP';

export interface RunpodEmulatorOptions {
  /** Address to listen on. Default `127.0.0.1`. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
  /** The account's API key. Default `DEFAULT_RUNPOD_EMULATOR_API_KEY`. */
  apiKey?: string;
  /** What RunPod sells. Default `DEFAULT_RUNPOD_EMULATOR_DATA`. */
  data?: Partial<RunpodEmulatorData>;
  /** Where pods run (`DockerRunpodPods`); without, they run at once with made-up ports (fast API tests). */
  containers?: RentalContainers;
  /** The emulator's clock in ms. Default `Date.now`. */
  clock?: () => number;
  /** The address `runtime.ports` gives. Default `127.0.0.1` (containers publish on loopback). */
  publicIp?: string;
  /** Faults active from the start. */
  faults?: readonly RunpodFault[];
  /** Where the emulator's own container failures are reported. Default `console.error`. */
  onContainerError?: (podId: string, error: unknown) => void;
}

/** One pod as `GET /_emulator/state` lists it. */
export interface RunpodEmulatorPodState {
  readonly id: string;
  readonly name: string;
  readonly imageName: string;
  readonly gpuTypeId: string | null;
  readonly gpuCount: number;
  readonly location: string;
  readonly desiredStatus: string;
  readonly container: string;
  readonly containerRegistryAuthId: string | null;
}

export interface RunpodEmulatorState {
  readonly pods: readonly RunpodEmulatorPodState[];
  /** Names of the saved registry credentials. */
  readonly registryAuths: readonly string[];
}

/** Also a `BackendEmulator`, so `testBackend()` drives it directly. */
export interface RunpodEmulator extends BackendEmulator {
  /** The server's root, `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The GraphQL endpoint, `<url>/graphql`: the backend's `endpoint_url`. */
  readonly graphqlUrl: string;
  /** gpuhunt's v3 catalog layout, `<url>/_emulator/catalog`: a server's `catalog.url`. */
  readonly catalogUrl: string;
  /** The RunPod rows the bucket publishes (what gpuhunt collected from the stock at start). */
  readonly catalogItems: readonly CatalogItem[];
  readonly apiKey: string;
  readonly server: EmulatorServer;
  /** The locations with stock: listed data centers and Community Cloud countries. */
  readonly regions: readonly string[];
  addFault(fault: RunpodFault): ActiveRunpodFault;
  removeFault(id: string): boolean;
  clearFaults(): void;
  faults(): readonly ActiveRunpodFault[];
  /** RunPod takes a spot pod back: its container stops, the pod is `EXITED`. */
  interrupt(podId: string): void;
  /** The next `count` deploys find no machine. Default 1. */
  failNextLaunchWithNoCapacity(count?: number): void;
  /** Terminates a pod behind the backend's back. */
  removeInstance(podId: string): Promise<void>;
  /** Pods deployed so far, terminated ones included. */
  launchedMachineCount(): number;
  state(): RunpodEmulatorState;
  /** Waits until the containers being started or stopped are. */
  settle(): Promise<void>;
  /** Stops the server and terminates every pod (the containers object is the caller's to close). */
  close(): Promise<void>;
}

export async function startRunpodEmulator(options: RunpodEmulatorOptions = {}): Promise<RunpodEmulator> {
  const apiKey = options.apiKey ?? DEFAULT_RUNPOD_EMULATOR_API_KEY;
  if (apiKey.trim() === '') throw new Error('apiKey: must not be empty');
  const data: RunpodEmulatorData = { ...DEFAULT_RUNPOD_EMULATOR_DATA, ...options.data };
  const stock = new RunpodStock(data.gpuTypes);
  const faults = new RunpodEmulatorFaults();
  for (const fault of options.faults ?? []) faults.add(fault);
  const pods = new RunpodPods({
    clock: options.clock ?? Date.now,
    containers: options.containers,
    publicIp: options.publicIp ?? '127.0.0.1',
    onContainerError:
      options.onContainerError ??
      ((id, error) => console.error(`RunPod emulator: the container of pod ${id} failed: ${String(error)}`)),
  });
  const api = new RunpodGraphqlApi({ data, pods, stock, faults, email: 'emulator@example.com' });
  const catalogItems = runpodCatalogItems(data, stock);
  const bucket = await publishRunpodCatalogBucket(catalogItems);

  function keyOf(request: EmulatorRequest): string | undefined {
    const header = request.headers.authorization;
    const bearer = typeof header === 'string' ? /^Bearer\s+(.+)$/i.exec(header.trim())?.[1] : undefined;
    return bearer ?? request.query.api_key;
  }

  async function graphql(request: EmulatorRequest): Promise<EmulatorResponse> {
    const body = (request.body ?? {}) as { query?: unknown; variables?: unknown };
    if (typeof body.query !== 'string') {
      return json({ errors: [{ message: 'Must provide query string.' }] }, 400);
    }
    let parsed: ReturnType<typeof parseRunpodGraphqlRequest>;
    try {
      parsed = parseRunpodGraphqlRequest(body.query);
    } catch (error) {
      if (!(error instanceof RunpodGraphqlRequestError)) throw error;
      return json(
        { errors: error.errors.map((each) => ({ message: each.message, locations: each.locations })) },
        400,
      );
    }
    const slow = faults.fire('SLOW_RESPONSE', { operations: parsed.operations });
    if (slow) await sleep(slow.delayMs ?? DEFAULT_RUNPOD_SLOW_RESPONSE_MS);
    if (faults.fire('RATE_LIMITED', { operations: parsed.operations })) return text('Too Many Requests', 429);
    const key = keyOf(request);
    const needsKey = parsed.operations.some((operation) => !RUNPOD_PUBLIC_FIELDS.has(operation));
    if ((key !== undefined && key !== apiKey) || (key === undefined && needsKey)) {
      return json({ errors: [{ message: 'Unauthorized' }] }, 401);
    }
    const variables = (body.variables ?? undefined) as Record<string, unknown> | undefined;
    return json(await api.execute(parsed, variables));
  }

  const state = (): RunpodEmulatorState => ({
    pods: pods.all().map((pod) => ({
      id: pod.id,
      name: pod.request.name,
      imageName: pod.request.imageName,
      gpuTypeId: pod.request.gpuTypeId ?? pod.request.cpuInstanceId,
      gpuCount: pod.request.gpuCount,
      location: pod.request.location,
      desiredStatus: pod.desiredStatus,
      container: pod.container.kind,
      containerRegistryAuthId: pod.request.containerRegistryAuthId,
    })),
    registryAuths: api.registryAuths.map((auth) => auth.name),
  });

  function findPod(id: string) {
    const pod = pods.get(id);
    if (!pod) throw new Error(`the RunPod emulator has no pod ${id}`);
    return pod;
  }

  const server = await startEmulatorServer({
    host: options.host,
    port: options.port,
    routes: [
      ...emulatorControlRoutes({ state, faults, parseFault: parseRunpodFault }),
      {
        name: 'control.interrupt',
        method: 'POST',
        path: '/_emulator/pods/:id/interrupt',
        handle: (request) => {
          try {
            pods.interrupt(findPod(request.params.id ?? ''));
            return json({ interrupted: request.params.id });
          } catch (error) {
            throw controlError(error);
          }
        },
      },
      ...bucket.routes,
      { name: 'graphql', method: 'POST', path: '/graphql', handle: graphql },
    ],
  });

  return {
    url: server.url,
    graphqlUrl: `${server.url}/graphql`,
    catalogUrl: `${server.url}/_emulator/catalog`,
    catalogItems,
    apiKey,
    server,
    regions: [...new Set(data.gpuTypes.flatMap((gpuType) => Object.keys(gpuType.stock)))].filter(
      (location) =>
        data.dataCenters.some((center) => center.id === location && center.listed) || !location.includes('-'),
    ),
    addFault: (fault) => faults.add(fault),
    removeFault: (id) => faults.remove(id),
    clearFaults: () => faults.clear(),
    faults: () => faults.list(),
    interrupt: (podId) => pods.interrupt(findPod(podId)),
    failNextLaunchWithNoCapacity: (count = 1) => {
      faults.add({ code: 'NO_CAPACITY', count });
    },
    async removeInstance(podId) {
      await api.terminate(findPod(podId));
    },
    launchedMachineCount: () => pods.createdCount,
    state,
    settle: () => pods.settle(),
    async close() {
      await server.close();
      await pods.close();
      await bucket.close();
    },
  };
}
