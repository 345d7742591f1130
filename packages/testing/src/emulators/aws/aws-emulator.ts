/**
 * The AWS emulator: one loopback server that answers EC2 (Query API, XML), STS
 * (GetCallerIdentity), Service Quotas and Pricing (JSON 1.1) as the AWS SDK v3 expects, so a
 * backend's real SDK clients, signing and retries run unchanged against it (`endpoint` = its URL).
 * The service and region come from the SigV4 credential scope, as AWS routes them.
 */
import type { BackendEmulator, MaybePromise } from '../../conformance/test-backend-options.js';
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import { EmulatorConnectionReset, json, text } from '../../emulator/emulator-responses.js';
import {
  type EmulatorRequest,
  type EmulatorServer,
  startEmulatorServer,
} from '../../emulator/emulator-server.js';
import type { EmulatedHosts } from '../emulated-hosts.js';
import { controlError, emulatorControlRoutes } from '../emulator-control-routes.js';
import { LoopBackedDisks, loopDevicesUsable } from '../hosts/loop-block-devices.js';
import { Ec2Account } from './aws-ec2-account.js';
import { EC2_ACTIONS } from './aws-ec2-actions.js';
import type { CapacityReservationSpec, CapacityReservationState } from './aws-ec2-capacity-reservations.js';
import { DEFAULT_EC2_IMAGES, type Ec2ImageTemplate } from './aws-ec2-images.js';
import { type AwsEmulatorTimeline, DEFAULT_AWS_EMULATOR_TIMELINE } from './aws-ec2-instances.js';
import { DEFAULT_EC2_VOLUME_TIMELINE, type Ec2VolumeTimeline } from './aws-ec2-volumes.js';
import { AwsEmulatorData, DEFAULT_AWS_EMULATOR_REGIONS } from './aws-emulator-data.js';
import {
  type ActiveAwsFault,
  AwsEmulatorFaults,
  type AwsFault,
  parseAwsFault,
} from './aws-emulator-faults.js';
import {
  type AwsEmulatorCredentials,
  asService,
  awsRequestAuthenticator,
  DEFAULT_AWS_EMULATOR_CREDENTIALS,
  formOf,
  jsonBodyOf,
  jsonOperation,
  serviceOf,
} from './aws-emulator-requests.js';
import {
  type AwsEmulatorCapacityReservationState,
  type AwsEmulatorState,
  awsEmulatorState,
  capacityReservationState,
} from './aws-emulator-state.js';
import {
  BULK_PRICE_LIST_PATH,
  bulkPriceListCsv,
  handlePricingAction,
  PRICING_TARGET_PREFIX,
} from './aws-pricing.js';
import { handleServiceQuotasAction, SERVICE_QUOTAS_TARGET_PREFIX } from './aws-service-quotas.js';
import { handleStsAction } from './aws-sts.js';
import { Ec2ApiError } from './ec2-api-error.js';

export { type AwsEmulatorCredentials, DEFAULT_AWS_EMULATOR_CREDENTIALS } from './aws-emulator-requests.js';
export type {
  AwsEmulatorCapacityReservationState,
  AwsEmulatorInstanceState,
  AwsEmulatorPlacementGroupState,
  AwsEmulatorState,
  AwsEmulatorVolumeState,
} from './aws-emulator-state.js';

export const DEFAULT_AWS_EMULATOR_ACCOUNT_ID = '123456789012';

export interface AwsEmulatorOptions {
  /** Address to listen on. Default `127.0.0.1`. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
  /** The machines instances boot; without, instances get made-up addresses (fast API tests). */
  hosts?: EmulatedHosts;
  /** Regions the account has; each must be in the emulator's data. Default `DEFAULT_AWS_EMULATOR_REGIONS`. */
  regions?: readonly string[];
  /** Keys the services accept. Default `[DEFAULT_AWS_EMULATOR_CREDENTIALS]`. */
  credentials?: readonly AwsEmulatorCredentials[];
  accountId?: string;
  /** Recompute SigV4 signatures and answer SignatureDoesNotMatch on a wrong secret. Default true. */
  checkSignatures?: boolean;
  /** Steps of an instance's life; missing fields keep `DEFAULT_AWS_EMULATOR_TIMELINE`. */
  timeline?: Partial<AwsEmulatorTimeline>;
  /** The emulator's clock in ms (a test's manual clock). Default `Date.now`. */
  clock?: () => number;
  /** vCPU quota values by Service Quotas code (e.g. `{'L-DB2E81BA': 0}`); others `DEFAULT_VCPU_QUOTA`. */
  quotas?: Readonly<Record<string, number>>;
  /** AMIs each region has. Default `DEFAULT_EC2_IMAGES`. */
  images?: readonly Ec2ImageTemplate[];
  /** Faults active from the start. */
  faults?: readonly AwsFault[];
  /** Where host failures are reported. Default `console.error`. */
  onHostError?: (instanceId: string, error: unknown) => void;
  /** Steps of EBS volumes and attachments; missing fields keep `DEFAULT_EC2_VOLUME_TIMELINE`. */
  volumeTimeline?: Partial<Ec2VolumeTimeline>;
  /**
   * With `hosts`: attached EBS volumes are real block devices in the hosts (a sparse file on a
   * loop device each; needs root). Default: when hosts can take devices and loop devices work.
   */
  blockDevices?: boolean;
}

/** An EC2 answer an `AnswerHeld` fault holds back: the action ran, the client has no answer yet. */
export interface AwsHeldAnswer {
  readonly action: string;
  readonly region: string;
  /** The request's ClientToken (RunInstances), if it had one. */
  readonly clientToken: string | undefined;
}

/** Also a `BackendEmulator`, so `testBackend()` drives it directly. */
export interface AwsEmulator extends BackendEmulator {
  /** `http://127.0.0.1:<port>`: the `endpoint` of every SDK client. */
  readonly url: string;
  readonly server: EmulatorServer;
  readonly credentials: AwsEmulatorCredentials;
  readonly accountId: string;
  readonly regions: readonly string[];
  readonly data: AwsEmulatorData;
  /** Activates a fault; answers it with its id (for `removeFault`). */
  addFault(fault: AwsFault): ActiveAwsFault;
  removeFault(id: string): boolean;
  clearFaults(): void;
  faults(): readonly ActiveAwsFault[];
  /** Takes a pending or running spot instance back now (terminated, `Server.SpotInstanceTermination`, host gone). */
  interruptSpotInstance(instanceId: string): void;
  /**
   * Makes a Capacity Reservation (or, with `reservationType: 'capacity-block'`, a Capacity Block)
   * as if the account had created or bought it: `active` unless told. Answers it with its `cr-` id.
   */
  addCapacityReservation(spec: CapacityReservationSpec): AwsEmulatorCapacityReservationState;
  /** Moves a reservation to another state (expired, cancelled, a block's `scheduled` → `active`). */
  setCapacityReservationState(
    id: string,
    state: CapacityReservationState,
  ): AwsEmulatorCapacityReservationState;
  state(): AwsEmulatorState;
  /** The answers `AnswerHeld` faults hold back right now, oldest first. */
  heldAnswers(): readonly AwsHeldAnswer[];
  /** Sends every held answer now. */
  releaseHeldAnswers(): void;
  /**
   * The next `count` launches (each ClientToken, over every zone and SDK retry) fail with
   * InsufficientInstanceCapacity. Default 1.
   */
  failNextLaunchWithNoCapacity(count?: number): void;
  /** Deletes an instance behind the backend's back (its host stops; the API answers NotFound). */
  removeInstance(instanceId: string): void;
  /** Instances launched so far, terminated ones included. */
  launchedMachineCount(): number;
  /** Stops the server (the hosts belong to the caller: close them yourself). */
  close(): Promise<void>;
}

export async function startAwsEmulator(options: AwsEmulatorOptions = {}): Promise<AwsEmulator> {
  const data = new AwsEmulatorData(options.regions ?? DEFAULT_AWS_EMULATOR_REGIONS);
  const credentials = options.credentials ?? [DEFAULT_AWS_EMULATOR_CREDENTIALS];
  const primaryCredentials = credentials[0];
  if (!primaryCredentials) throw new Error('credentials: give at least one key pair');
  const accountId = options.accountId ?? DEFAULT_AWS_EMULATOR_ACCOUNT_ID;
  const checkSignatures = options.checkSignatures ?? true;
  const faults = new AwsEmulatorFaults();
  for (const fault of options.faults ?? []) faults.add(fault);
  const blockDevices =
    options.hosts?.attachBlockDevice !== undefined && (options.blockDevices ?? (await loopDevicesUsable()));
  const disks = blockDevices ? new LoopBackedDisks('dstack-aws-emulator-ebs-') : undefined;
  const authenticate = awsRequestAuthenticator({
    credentials,
    checkSignatures,
    faults,
    regions: data.regions,
  });
  const account = new Ec2Account({
    accountId,
    data,
    faults,
    clock: options.clock ?? Date.now,
    timeline: { ...DEFAULT_AWS_EMULATOR_TIMELINE, ...options.timeline },
    hosts: options.hosts,
    volumeTimeline: { ...DEFAULT_EC2_VOLUME_TIMELINE, ...options.volumeTimeline },
    disks,
    images: options.images ?? DEFAULT_EC2_IMAGES,
    quotas: options.quotas ?? {},
    onHostError:
      options.onHostError ??
      ((instanceId, error) => console.error(`AWS emulator: host of ${instanceId} failed: ${String(error)}`)),
  });

  /** Releases of the answers held now (each resolves its request with the action's answer). */
  const held = new Map<AwsHeldAnswer, () => void>();

  /** Answers `answer` after `delayMs`, or when the emulator closes (no delay). */
  function holdAnswer(
    answer: EmulatorResponse,
    what: AwsHeldAnswer,
    delayMs: number | undefined,
  ): Promise<EmulatorResponse> {
    return new Promise((resolve) => {
      const release = () => {
        clearTimeout(timer);
        held.delete(what);
        resolve(answer);
      };
      const timer = delayMs === undefined ? undefined : setTimeout(release, delayMs);
      held.set(what, release);
    });
  }

  function handleEc2(request: EmulatorRequest): MaybePromise<EmulatorResponse> {
    const { region } = authenticate(request, 'ec2');
    const params = formOf(request);
    const action = params.Action ?? '';
    if (faults.fire('RequestLimitExceeded', { action })) {
      throw new Ec2ApiError(503, 'RequestLimitExceeded', 'Request limit exceeded.');
    }
    const handler = EC2_ACTIONS[action];
    if (!handler)
      throw new Ec2ApiError(400, 'InvalidAction', `The action ${action} is not valid for this web service.`);
    const internalError = faults.fire('InternalError', { action });
    if (internalError && !internalError.afterAction) {
      throw new Ec2ApiError(500, 'InternalError', 'An internal error has occurred');
    }
    const reset = faults.fire('ConnectionReset', { action });
    if (reset && !reset.afterAction) throw new EmulatorConnectionReset();
    const answer = handler(account, region, params);
    if (internalError) throw new Ec2ApiError(500, 'InternalError', 'An internal error has occurred');
    if (reset) throw new EmulatorConnectionReset();
    const hold = faults.fire('AnswerHeld', { action });
    if (!hold) return answer;
    return holdAnswer(answer, { action, region, clientToken: params.ClientToken || undefined }, hold.delayMs);
  }

  function findInstance(id: string) {
    const instance = account.instances.all().find((each) => each.id === id);
    if (!instance) throw new Error(`The AWS emulator has no instance ${id}`);
    return instance;
  }

  const state = (): AwsEmulatorState => awsEmulatorState(account, disks);

  const server = await startEmulatorServer({
    host: options.host,
    port: options.port,
    routes: [
      ...emulatorControlRoutes({ state, faults, parseFault: parseAwsFault }),
      {
        name: 'instances.interrupt',
        method: 'POST',
        path: '/_emulator/instances/:id/interrupt',
        handle: (request) => {
          try {
            const instance = findInstance(request.params.id ?? '');
            account.instances.interruptSpot(instance);
            return json({ id: instance.id, state: account.instances.state(instance) });
          } catch (error) {
            throw controlError(error);
          }
        },
      },
      {
        name: 'capacity-reservations.add',
        method: 'POST',
        path: '/_emulator/capacity-reservations',
        handle: (request) => {
          try {
            const made = account.capacityReservations.add(request.body as CapacityReservationSpec);
            return json(capacityReservationState(account, made), 201);
          } catch (error) {
            throw controlError(error);
          }
        },
      },
      {
        name: 'capacity-reservations.state',
        method: 'POST',
        path: '/_emulator/capacity-reservations/:id/state',
        handle: (request) => {
          try {
            const wanted = (request.body as { state?: unknown } | null)?.state;
            const changed = account.capacityReservations.setState(
              request.params.id ?? '',
              wanted as CapacityReservationState,
            );
            return json(capacityReservationState(account, changed));
          } catch (error) {
            throw controlError(error);
          }
        },
      },
      {
        // The bulk price list is public: no signature, as on pricing.us-east-1.amazonaws.com.
        name: 'pricing.bulk',
        method: 'GET',
        path: BULK_PRICE_LIST_PATH,
        handle: () => text(bulkPriceListCsv(data), 200, { 'content-type': 'text/csv' }),
      },
      {
        name: 'ec2',
        method: 'POST',
        path: '/',
        when: (request) => serviceOf(request) === 'ec2',
        handle: asService('ec2', handleEc2),
      },
      {
        name: 'sts',
        method: 'POST',
        path: '/',
        when: (request) => serviceOf(request) === 'sts',
        handle: asService('sts', (request) => {
          const { credentials: caller } = authenticate(request, 'sts');
          return handleStsAction(formOf(request).Action, {
            accountId,
            accessKeyId: caller.accessKeyId,
            userName: caller.userName ?? 'dstack-emulator',
          });
        }),
      },
      {
        name: 'servicequotas',
        method: 'POST',
        path: '/',
        when: (request) => serviceOf(request) === 'servicequotas',
        handle: asService('servicequotas', (request) => {
          const { region } = authenticate(request, 'servicequotas');
          return handleServiceQuotasAction(
            account,
            region,
            jsonOperation(request, SERVICE_QUOTAS_TARGET_PREFIX),
            jsonBodyOf(request),
          );
        }),
      },
      {
        name: 'pricing',
        method: 'POST',
        path: '/',
        when: (request) => serviceOf(request) === 'pricing',
        handle: asService('pricing', (request) => {
          authenticate(request, 'pricing');
          return handlePricingAction(
            data,
            jsonOperation(request, PRICING_TARGET_PREFIX),
            jsonBodyOf(request),
          );
        }),
      },
    ],
  });

  return {
    url: server.url,
    server,
    credentials: primaryCredentials,
    accountId,
    regions: data.regions,
    data,
    addFault: (fault) => faults.add(fault),
    removeFault: (id) => faults.remove(id),
    clearFaults: () => faults.clear(),
    faults: () => faults.list(),
    interruptSpotInstance: (instanceId) => account.instances.interruptSpot(findInstance(instanceId)),
    addCapacityReservation: (spec) =>
      capacityReservationState(account, account.capacityReservations.add(spec)),
    setCapacityReservationState: (id, wanted) =>
      capacityReservationState(account, account.capacityReservations.setState(id, wanted)),
    state,
    heldAnswers: () => [...held.keys()],
    releaseHeldAnswers: () => {
      for (const release of [...held.values()]) release();
    },
    failNextLaunchWithNoCapacity: (count = 1) => {
      faults.add({ code: 'InsufficientInstanceCapacity', launches: count });
    },
    removeInstance: (instanceId) => account.instances.forget(findInstance(instanceId)),
    launchedMachineCount: () => account.instances.all().length,
    async close() {
      for (const release of [...held.values()]) release();
      account.instances.close();
      await server.close();
      // The hosts (the caller's) may still hold device nodes; this machine's loop devices and files go now.
      await account.volumes.settled();
      await disks?.close();
    },
  };
}
