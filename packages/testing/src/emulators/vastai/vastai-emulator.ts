/**
 * The Vast.ai emulator: one loopback server answering Vast.ai's REST API as
 * `https://console.vast.ai` does, so a backend's real HTTP client runs unchanged against it.
 *
 * `url` is the console's root (`http://127.0.0.1:<port>`, no `/api`): a backend appends
 * `/api/v0/…` and `/api/v1/…` exactly as it would to `https://console.vast.ai`.
 *
 *   POST /api/v0/bundles/          search (also `GET ?q=<json>` and `PUT /api/v0/search/asks/ {q}`); no key needed
 *   PUT  /api/v0/asks/{ask}/       rent: `{success: true, new_contract}`; `no_such_ask` (410) when the ask is gone
 *   GET  /api/v0/instances/{id}/   `{instances: {...}}`, `{instances: null}` when unknown
 *   GET  /api/v0/instances/        `{instances: [...]}`; `/api/v1/instances/?limit&after_token` pages with `next_token`
 *   DELETE /api/v0/instances/{id}/ `{success: true}`; unknown id: 404 `{success: false, error: "no_such_instance"}`
 *   GET  /api/v0/users/current/    the key's user
 *
 * Keys: `Authorization: Bearer <key>` or `?api_key=<key>`; a wrong key is 401 `auth_error`.
 * Beside the API: `/_emulator/state`, `/_emulator/faults`, and
 * `POST /_emulator/instances/{id}/outbid`, `POST /_emulator/asks/{id}/vanish`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { BackendEmulator } from '../../conformance/test-backend-options.js';
import { type EmulatorResponse, json } from '../../emulator/emulator-responses.js';
import {
  type EmulatorRequest,
  type EmulatorRoute,
  type EmulatorServer,
  startEmulatorServer,
} from '../../emulator/emulator-server.js';
import { controlError, emulatorControlRoutes } from '../emulator-control-routes.js';
import {
  invalidArgs,
  jsonBody,
  noSuchAsk,
  pathId,
  rateLimited,
  unauthorized,
  vastaiError,
} from './vastai-api-responses.js';
import type { VastaiContainers } from './vastai-docker-containers.js';
import {
  DEFAULT_VASTAI_EMULATOR_ASKS,
  type VastaiAskSpec,
  type VastaiOffer,
  vastaiLocation,
} from './vastai-emulator-data.js';
import {
  type ActiveVastaiFault,
  DEFAULT_VASTAI_OUTBID_AFTER_MS,
  DEFAULT_VASTAI_SLOW_RESPONSE_MS,
  parseVastaiFault,
  VastaiEmulatorFaults,
  type VastaiFault,
  type VastaiRoute,
} from './vastai-emulator-faults.js';
import {
  actualStatus,
  DEFAULT_VASTAI_EMULATOR_TIMELINE,
  type VastaiActualStatus,
  type VastaiEmulatorTimeline,
  type VastaiInstance,
  VastaiInstances,
} from './vastai-instances.js';
import { VastaiOfferBook } from './vastai-offer-book.js';
import { parseVastaiRentRequest, VastaiRentRequestError } from './vastai-rent-request.js';
import { VastaiQueryError } from './vastai-search-query.js';

/** The emulator's API key unless told otherwise. */
export const DEFAULT_VASTAI_EMULATOR_API_KEY = 'vastai-emulator-key-0123456789abcdef';
/** What `public_ipaddr` says: the loopback address with the trailing whitespace Vast.ai's answers may carry. */
export const DEFAULT_VASTAI_PUBLIC_IP_ADDRESS = '127.0.0.1 ';
/** How often the emulator notices due outbids on its own (so containers stop without polling). */
const TICK_MS = 200;

export interface VastaiEmulatorOptions {
  /** Address to listen on. Default `127.0.0.1`. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
  /** The API key the account has. Default `DEFAULT_VASTAI_EMULATOR_API_KEY`. */
  apiKey?: string;
  /** The asks the book starts with. Default `DEFAULT_VASTAI_EMULATOR_ASKS`. */
  asks?: readonly VastaiAskSpec[];
  /** Where rentals run (`DockerVastaiContainers`); without, they "run" with made-up host ports (fast API tests). */
  containers?: VastaiContainers;
  /** Steps of a rental's life; missing fields keep `DEFAULT_VASTAI_EMULATOR_TIMELINE`. */
  timeline?: Partial<VastaiEmulatorTimeline>;
  /** The emulator's clock in ms (a test's manual clock). Default `Date.now`. */
  clock?: () => number;
  /** `public_ipaddr` of a rental. Default `DEFAULT_VASTAI_PUBLIC_IP_ADDRESS` ("127.0.0.1 "). */
  publicIpAddress?: string;
  /** Faults active from the start. */
  faults?: readonly VastaiFault[];
  /** Where container failures that are the emulator's own (not the rental's) are reported. Default `console.error`. */
  onContainerError?: (contractId: number, error: unknown) => void;
}

/** One rental as `GET /_emulator/state` lists it. */
export interface VastaiEmulatorInstanceState {
  readonly id: number;
  readonly askId: number;
  readonly label: string | null;
  readonly image: string;
  /** The bid of an interruptible rental; null when on-demand. */
  readonly bid: number | null;
  readonly actualStatus: VastaiActualStatus;
  readonly curState: 'running' | 'stopped';
  readonly ports: Readonly<Record<string, readonly { HostIp: string; HostPort: string }[]>>;
  readonly statusMessage: string | null;
}

export interface VastaiEmulatorState {
  /** The asks that can be rented now. */
  readonly asks: readonly number[];
  readonly instances: readonly VastaiEmulatorInstanceState[];
}

/** Also a `BackendEmulator`, so `testBackend()` drives it directly. */
export interface VastaiEmulator extends BackendEmulator {
  /** The console's root, `http://127.0.0.1:<port>` (no `/api`): the backend's API base. */
  readonly url: string;
  /** The account's API key. */
  readonly apiKey: string;
  readonly server: EmulatorServer;
  /** The distinct locations of the book's asks as gpuhunt and dstack's `regions` name them (`cz-czechia`). */
  readonly regions: readonly string[];
  readonly book: VastaiOfferBook;
  addFault(fault: VastaiFault): ActiveVastaiFault;
  removeFault(id: string): boolean;
  clearFaults(): void;
  faults(): readonly ActiveVastaiFault[];
  /** An interruptible rental is outbid now: its container stops; the error names an unknown or on-demand one. */
  outbid(instanceId: number): void;
  /** The ask disappears from the book (someone else rented it); false when it was not there. */
  vanishAsk(askId: number): boolean;
  /** The next `count` rentals find their ask gone (`no_such_ask`). Default 1. */
  failNextLaunchWithNoCapacity(count?: number): void;
  /** Destroys a rental behind the backend's back (its container goes; the API then says it is unknown). */
  removeInstance(instanceId: string | number): Promise<void>;
  /** Rentals made so far, destroyed ones included. */
  launchedMachineCount(): number;
  state(): VastaiEmulatorState;
  /** The rental's record (undefined once destroyed). */
  instance(instanceId: number): Readonly<VastaiInstance> | undefined;
  /** Waits until the containers being started or stopped are. */
  settle(): Promise<void>;
  /** Stops the server and destroys every rental (the containers object belongs to the caller: close it yourself). */
  close(): Promise<void>;
}

export async function startVastaiEmulator(options: VastaiEmulatorOptions = {}): Promise<VastaiEmulator> {
  const apiKey = options.apiKey ?? DEFAULT_VASTAI_EMULATOR_API_KEY;
  if (apiKey.trim() === '') throw new Error('apiKey: must not be empty');
  const clock = options.clock ?? Date.now;
  const timeline = { ...DEFAULT_VASTAI_EMULATOR_TIMELINE, ...options.timeline };
  const book = new VastaiOfferBook(options.asks ?? DEFAULT_VASTAI_EMULATOR_ASKS);
  const faults = new VastaiEmulatorFaults();
  for (const fault of options.faults ?? []) faults.add(fault);
  const instances = new VastaiInstances({
    clock,
    timeline,
    containers: options.containers,
    publicIpAddress: options.publicIpAddress ?? DEFAULT_VASTAI_PUBLIC_IP_ADDRESS,
    onContainerError:
      options.onContainerError ??
      ((id, error) =>
        console.error(`Vast.ai emulator: the container of instance ${id} failed: ${String(error)}`)),
  });
  let rentals = 0;

  function authenticate(request: EmulatorRequest): void {
    const header = request.headers.authorization;
    const bearer = typeof header === 'string' ? /^Bearer\s+(.+)$/i.exec(header.trim())?.[1] : undefined;
    const key = bearer ?? request.query.api_key;
    if (key !== apiKey) throw unauthorized();
  }

  /** A slow answer, then the rate limit, then the key: the order Vast.ai's front end applies them. */
  function apiRoute(
    name: VastaiRoute,
    method: string,
    path: string,
    handle: (request: EmulatorRequest) => EmulatorResponse | Promise<EmulatorResponse>,
    auth = true,
  ): EmulatorRoute {
    return {
      name: `${name} ${method} ${path}`,
      method,
      path,
      handle: async (request) => {
        const slow = faults.fire('SLOW_RESPONSE', { route: name });
        if (slow) await sleep(slow.delayMs ?? DEFAULT_VASTAI_SLOW_RESPONSE_MS);
        if (faults.fire('RATE_LIMITED', { route: name })) return rateLimited();
        if (auth) authenticate(request);
        return handle(request);
      },
    };
  }

  function search(body: unknown): EmulatorResponse {
    try {
      return json({ offers: book.search(body) });
    } catch (error) {
      if (error instanceof VastaiQueryError) throw invalidArgs(error.message);
      throw error;
    }
  }

  function rent(request: EmulatorRequest): EmulatorResponse {
    const askId = pathId(request.params.id, 'ask id');
    let rentRequest: ReturnType<typeof parseVastaiRentRequest>;
    try {
      rentRequest = parseVastaiRentRequest(jsonBody(request.body));
    } catch (error) {
      if (error instanceof VastaiRentRequestError) throw invalidArgs(error.message);
      throw error;
    }
    if (faults.fire('ASK_VANISHED', { askId })) book.vanish(askId);
    const offer = book.find(askId);
    if (!offer) throw noSuchAsk(askId);
    if (rentRequest.diskGb > offer.disk_space) {
      throw invalidArgs(`disk: ${rentRequest.diskGb} GB asked, ask ${askId} has ${offer.disk_space} GB`);
    }
    book.take(askId);
    const outbid = rentRequest.bid === null ? undefined : faults.fire('OUTBID', { askId });
    const pullFailure = faults.fire('IMAGE_PULL_FAILED', { image: rentRequest.image });
    const runtimeFailure = pullFailure
      ? undefined
      : faults.fire('OCI_RUNTIME_CREATE_FAILED', { image: rentRequest.image });
    const instance = instances.create(offer, rentRequest, {
      outbidAfterMs: outbid ? (outbid.afterRunningMs ?? DEFAULT_VASTAI_OUTBID_AFTER_MS) : undefined,
      forcedFailure: pullFailure ? { stage: 'pull' } : runtimeFailure ? { stage: 'runtime' } : undefined,
    });
    rentals += 1;
    if (instance.lowBid) {
      // Vast.ai makes the contract anyway, stopped, and says the rental failed.
      return json({
        success: false,
        error: 'insufficient_bid',
        msg: `Your bid of $${rentRequest.bid}/hr is below the minimum bid of $${offer.min_bid}/hr for ask ${askId}; the instance was created stopped.`,
        new_contract: instance.id,
      });
    }
    return json({ success: true, new_contract: instance.id });
  }

  function listPage(request: EmulatorRequest): EmulatorResponse {
    const all = instances.all().map((instance) => instances.view(instance));
    const limit = request.query.limit === undefined ? 25 : Number(request.query.limit);
    if (!Number.isInteger(limit) || limit < 1)
      throw invalidArgs(`limit: expected a positive integer, got ${request.query.limit}`);
    const after = request.query.after_token ? Number(request.query.after_token) : 0;
    const page = all.filter((view) => (view.id as number) > after).slice(0, limit);
    const last = page.at(-1);
    const more = last !== undefined && all.some((view) => (view.id as number) > (last.id as number));
    return json({ instances: page, next_token: more ? String(last.id) : null });
  }

  function findInstance(instanceId: number): VastaiInstance {
    const instance = instances.get(instanceId);
    if (!instance) throw new Error(`the Vast.ai emulator has no instance ${instanceId}`);
    return instance;
  }

  const state = (): VastaiEmulatorState => ({
    asks: book.available().map((offer: VastaiOffer) => offer.id),
    instances: instances.all().map((instance) => {
      const view = instances.view(instance);
      return {
        id: instance.id,
        askId: instance.offer.id,
        label: instance.request.label,
        image: instance.request.image,
        bid: instance.request.bid,
        actualStatus: actualStatus(instance, clock(), timeline),
        curState: view.cur_state as 'running' | 'stopped',
        ports: view.ports as VastaiEmulatorInstanceState['ports'],
        statusMessage: view.status_msg as string | null,
      };
    }),
  });

  const controlRoutes: EmulatorRoute[] = [
    ...emulatorControlRoutes({ state, faults, parseFault: parseVastaiFault }),
    {
      name: 'control.outbid',
      method: 'POST',
      path: '/_emulator/instances/:id/outbid',
      handle: (request) => {
        try {
          const instance = findInstance(Number(request.params.id));
          instances.outbid(instance);
          return json({ id: instance.id, actual_status: actualStatus(instance, clock(), timeline) });
        } catch (error) {
          throw controlError(error);
        }
      },
    },
    {
      name: 'control.vanish',
      method: 'POST',
      path: '/_emulator/asks/:id/vanish',
      handle: (request) =>
        book.vanish(Number(request.params.id))
          ? json({ vanished: Number(request.params.id) })
          : json({ error: `no ask ${request.params.id} in the book` }, 404),
    },
  ];

  const apiRoutes: EmulatorRoute[] = [
    apiRoute('search', 'POST', '/api/v0/bundles', (request) => search(jsonBody(request.body)), false),
    apiRoute(
      'search',
      'GET',
      '/api/v0/bundles',
      (request) => search(request.query.q === undefined ? {} : jsonBody(request.query.q)),
      false,
    ),
    apiRoute(
      'search',
      'PUT',
      '/api/v0/search/asks',
      (request) => {
        const body = jsonBody(request.body) as { q?: unknown } | undefined;
        return search(body?.q);
      },
      false,
    ),
    apiRoute('rent', 'PUT', '/api/v0/asks/:id', rent),
    apiRoute('show', 'GET', '/api/v0/instances/:id', (request) => {
      const instance = instances.get(pathId(request.params.id, 'instance id'));
      return json({ instances: instance ? instances.view(instance) : null });
    }),
    apiRoute('list', 'GET', '/api/v0/instances', () =>
      json({ instances: instances.all().map((instance) => instances.view(instance)) }),
    ),
    apiRoute('list', 'GET', '/api/v1/instances', listPage),
    apiRoute('destroy', 'DELETE', '/api/v0/instances/:id', async (request) => {
      const id = pathId(request.params.id, 'instance id');
      const instance = instances.get(id);
      if (!instance || !(await instances.destroy(id))) {
        throw vastaiError(
          404,
          'no_such_instance',
          `error 404/3603: no_such_instance Instance ${id} not found.`,
        );
      }
      book.release(instance.offer.id);
      return json({ success: true });
    }),
    apiRoute('user', 'GET', '/api/v0/users/current', () =>
      json({
        id: 424242,
        username: 'emulator',
        email: 'emulator@example.com',
        balance: 0,
        credit: 100,
        api_key: apiKey,
        can_pay: true,
      }),
    ),
  ];

  const server = await startEmulatorServer({
    host: options.host,
    port: options.port,
    routes: [...controlRoutes, ...apiRoutes],
  });
  // Outbids fall due while nobody polls: their containers stop on time all the same.
  const ticker = setInterval(() => instances.all(), TICK_MS);
  ticker.unref();

  return {
    url: server.url,
    apiKey,
    server,
    regions: [...new Set(book.available().map((offer) => vastaiLocation(offer.geolocation)))],
    book,
    addFault: (fault) => faults.add(fault),
    removeFault: (id) => faults.remove(id),
    clearFaults: () => faults.clear(),
    faults: () => faults.list(),
    outbid: (instanceId) => instances.outbid(findInstance(instanceId)),
    vanishAsk: (askId) => book.vanish(askId),
    failNextLaunchWithNoCapacity: (count = 1) => {
      faults.add({ code: 'ASK_VANISHED', count });
    },
    async removeInstance(instanceId) {
      const instance = findInstance(Number(instanceId));
      await instances.destroy(instance.id);
      book.release(instance.offer.id);
    },
    launchedMachineCount: () => rentals,
    state,
    instance: (instanceId) => instances.get(instanceId),
    settle: () => instances.settle(),
    async close() {
      clearInterval(ticker);
      await server.close();
      await instances.close();
    },
  };
}
