/**
 * The AWS emulator: one loopback server that answers EC2 (Query API, XML), STS
 * (GetCallerIdentity), Service Quotas and Pricing (JSON 1.1) as the AWS SDK v3 expects, so a
 * backend's real SDK clients, signing and retries run unchanged against it (`endpoint` = its URL).
 * The service and region come from the SigV4 credential scope, as AWS routes them.
 */
import type { BackendEmulator, MaybePromise } from '../../conformance/test-backend-options.js';
import type { EmulatorResponse } from '../../emulator/emulator-responses.js';
import { EmulatorHttpError, json, text } from '../../emulator/emulator-responses.js';
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
import type {
  CapacityReservationSpec,
  CapacityReservationState,
  CapacityReservationType,
  Ec2CapacityReservation,
} from './aws-ec2-capacity-reservations.js';
import { DEFAULT_EC2_IMAGES, type Ec2ImageTemplate } from './aws-ec2-images.js';
import {
  type AwsEmulatorTimeline,
  DEFAULT_AWS_EMULATOR_TIMELINE,
  type Ec2InstanceStateName,
} from './aws-ec2-instances.js';
import {
  DEFAULT_EC2_VOLUME_TIMELINE,
  type Ec2AttachmentStatus,
  type Ec2VolumeStatus,
  type Ec2VolumeTimeline,
} from './aws-ec2-volumes.js';
import { AwsEmulatorData, DEFAULT_AWS_EMULATOR_REGIONS } from './aws-emulator-data.js';
import {
  type ActiveAwsFault,
  AwsEmulatorFaults,
  type AwsFault,
  parseAwsFault,
} from './aws-emulator-faults.js';
import {
  BULK_PRICE_LIST_PATH,
  bulkPriceListCsv,
  handlePricingAction,
  PRICING_TARGET_PREFIX,
} from './aws-pricing.js';
import { handleServiceQuotasAction, SERVICE_QUOTAS_TARGET_PREFIX } from './aws-service-quotas.js';
import { parseSigV4Authorization, sigV4SignatureMatches } from './aws-sigv4.js';
import { handleStsAction } from './aws-sts.js';
import type { AwsMarket } from './aws-vcpu-quotas.js';
import { awsJsonError, awsQueryError, STS_XML_NAMESPACE } from './aws-xml.js';
import { Ec2ApiError } from './ec2-api-error.js';

export interface AwsEmulatorCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** The IAM user GetCallerIdentity names. Default `dstack-emulator`. */
  readonly userName?: string;
}

/** The key pair every emulator accepts unless told otherwise (fake, in AWS's key format). */
export const DEFAULT_AWS_EMULATOR_CREDENTIALS: AwsEmulatorCredentials = {
  accessKeyId: 'AKIADSTACKEMULATOR01',
  secretAccessKey: 'dstackEmulatorSecretKey0000000000000000X',
  userName: 'dstack-emulator',
};

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

/** One instance as `GET /_emulator/state` lists it; `state` as EC2 names it. */
export interface AwsEmulatorInstanceState {
  readonly id: string;
  readonly type: string;
  readonly zone: string;
  readonly market: AwsMarket;
  readonly state: Ec2InstanceStateName;
  /** The Capacity Reservation (or Capacity Block) it runs in, or null. */
  readonly capacityReservationId: string | null;
}

/** A Capacity Reservation as `GET /_emulator/state` lists it (`addCapacityReservation` answers it too). */
export interface AwsEmulatorCapacityReservationState {
  readonly id: string;
  readonly region: string;
  readonly zone: string;
  readonly instanceType: string;
  readonly reservationType: CapacityReservationType;
  readonly state: CapacityReservationState;
  readonly totalInstanceCount: number;
  readonly availableInstanceCount: number;
  /** Its pending and running instances. */
  readonly instances: readonly string[];
}

/** An EBS volume as `GET /_emulator/state` lists it. */
export interface AwsEmulatorVolumeState {
  readonly id: string;
  readonly zone: string;
  readonly sizeGiB: number;
  readonly status: Ec2VolumeStatus;
  readonly attachment: {
    readonly instanceId: string;
    readonly device: string;
    readonly status: Ec2AttachmentStatus;
    /** The device in the host (`/dev/nvme1n1`), when it is a real one. */
    readonly hostDevice: string | null;
  } | null;
}

export interface AwsEmulatorPlacementGroupState {
  readonly name: string;
  readonly region: string;
  readonly strategy: string;
  /** Live (pending or running) instances in it. */
  readonly instances: readonly string[];
}

export interface AwsEmulatorState {
  readonly instances: readonly AwsEmulatorInstanceState[];
  readonly volumes: readonly AwsEmulatorVolumeState[];
  readonly placementGroups: readonly AwsEmulatorPlacementGroupState[];
  readonly capacityReservations: readonly AwsEmulatorCapacityReservationState[];
  /** Loop devices holding attached volumes now (the volume id and the device on this machine). */
  readonly loopDevices: readonly { readonly volumeId: string; readonly path: string }[];
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

type AwsService = 'ec2' | 'sts' | 'servicequotas' | 'pricing';

/** The service a request is for: the credential scope's, else what the request looks like. */
function serviceOf(request: EmulatorRequest): AwsService | undefined {
  const scoped = parseSigV4Authorization(headerOf(request, 'authorization'))?.service;
  if (scoped === 'ec2' || scoped === 'sts' || scoped === 'servicequotas' || scoped === 'pricing')
    return scoped;
  const target = headerOf(request, 'x-amz-target') ?? '';
  if (target.startsWith(SERVICE_QUOTAS_TARGET_PREFIX)) return 'servicequotas';
  if (target.startsWith(PRICING_TARGET_PREFIX)) return 'pricing';
  const form = formOf(request);
  if (form.Action !== undefined) return form.Version === '2011-06-15' ? 'sts' : 'ec2';
  return undefined;
}

function headerOf(request: EmulatorRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

function formOf(request: EmulatorRequest): Record<string, string> {
  return typeof request.body === 'object' && request.body !== null
    ? (request.body as Record<string, string>)
    : {};
}

/** The body of an AWS JSON 1.1 call (`application/x-amz-json-1.1`, which the toolkit leaves as text). */
function jsonBodyOf(request: EmulatorRequest): unknown {
  const body = request.rawBody.toString('utf8');
  if (body.trim() === '') return {};
  try {
    return JSON.parse(body);
  } catch {
    throw new EmulatorHttpError(
      awsJsonError(400, 'SerializationException', 'The request body is not valid JSON'),
    );
  }
}

/**
 * Runs a service handler; an unexpected exception (an emulator bug) is answered as the service's
 * own internal error naming it, so the SDK reports it instead of failing to parse the answer.
 */
function asService(
  service: AwsService,
  handler: (request: EmulatorRequest) => MaybePromise<EmulatorResponse>,
): (request: EmulatorRequest) => MaybePromise<EmulatorResponse> {
  return (request) => {
    try {
      return handler(request);
    } catch (error) {
      if (error instanceof EmulatorHttpError) throw error;
      const message = `AWS emulator bug: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`;
      if (service === 'ec2') return new Ec2ApiError(500, 'InternalError', message).response;
      if (service === 'sts')
        return awsQueryError(500, STS_XML_NAMESPACE, 'InternalFailure', message, 'Receiver');
      return awsJsonError(500, 'ServiceException', message);
    }
  };
}

/** The error each service answers for a missing key, an unknown key and a wrong signature. */
function authError(
  service: AwsService,
  kind: 'missing' | 'unknown' | 'signature',
  detail = '',
): EmulatorResponse {
  const signatureMessage =
    'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.';
  const invalidToken = `The security token included in the request is invalid.${detail}`;
  if (service === 'ec2') {
    if (kind === 'signature') return new Ec2ApiError(403, 'SignatureDoesNotMatch', signatureMessage).response;
    return new Ec2ApiError(
      401,
      'AuthFailure',
      `AWS was not able to validate the provided access credentials${detail}`,
    ).response;
  }
  if (service === 'sts') {
    if (kind === 'missing') {
      return awsQueryError(
        403,
        STS_XML_NAMESPACE,
        'MissingAuthenticationToken',
        'Request is missing Authentication Token',
      );
    }
    if (kind === 'signature')
      return awsQueryError(403, STS_XML_NAMESPACE, 'SignatureDoesNotMatch', signatureMessage);
    return awsQueryError(403, STS_XML_NAMESPACE, 'InvalidClientTokenId', invalidToken);
  }
  if (kind === 'missing')
    return awsJsonError(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
  if (kind === 'signature') return awsJsonError(403, 'InvalidSignatureException', signatureMessage);
  return awsJsonError(403, 'UnrecognizedClientException', invalidToken);
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

  /** The key and region of a signed request, or the error its service answers. */
  function authenticate(
    request: EmulatorRequest,
    service: AwsService,
  ): { region: string; credentials: AwsEmulatorCredentials } {
    const authorization = parseSigV4Authorization(headerOf(request, 'authorization'));
    if (!authorization) throw new EmulatorHttpError(authError(service, 'missing'));
    const known = credentials.find((each) => each.accessKeyId === authorization.accessKeyId);
    if (!known || faults.has('AuthFailure')) throw new EmulatorHttpError(authError(service, 'unknown'));
    if (checkSignatures && !sigV4SignatureMatches(request, authorization, known.secretAccessKey)) {
      throw new EmulatorHttpError(authError(service, 'signature'));
    }
    if (service === 'ec2' && !data.regions.includes(authorization.region)) {
      // What EC2 answers in a region the account has not enabled.
      throw new EmulatorHttpError(
        authError(
          service,
          'unknown',
          ` (region ${authorization.region} is not emulated; emulated: ${data.regions.join(', ')})`,
        ),
      );
    }
    return { region: authorization.region, credentials: known };
  }

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
    const answer = handler(account, region, params);
    if (internalError) throw new Ec2ApiError(500, 'InternalError', 'An internal error has occurred');
    const hold = faults.fire('AnswerHeld', { action });
    if (!hold) return answer;
    return holdAnswer(answer, { action, region, clientToken: params.ClientToken || undefined }, hold.delayMs);
  }

  function jsonOperation(request: EmulatorRequest, prefix: string): string {
    return (headerOf(request, 'x-amz-target') ?? '').slice(prefix.length);
  }

  function findInstance(id: string) {
    const instance = account.instances.all().find((each) => each.id === id);
    if (!instance) throw new Error(`The AWS emulator has no instance ${id}`);
    return instance;
  }

  const reservationState = (reservation: Ec2CapacityReservation): AwsEmulatorCapacityReservationState => ({
    id: reservation.id,
    region: reservation.region,
    zone: reservation.zone,
    instanceType: reservation.instanceType,
    reservationType: reservation.reservationType,
    state: reservation.state,
    totalInstanceCount: reservation.instanceCount,
    availableInstanceCount: account.capacityReservations.available(reservation),
    instances: account.instances
      .all()
      .filter((instance) => instance.capacityReservationId === reservation.id)
      .filter((instance) => ['pending', 'running'].includes(account.instances.state(instance)))
      .map((instance) => instance.id),
  });

  const state = (): AwsEmulatorState => ({
    instances: account.instances.all().map((instance) => ({
      id: instance.id,
      type: instance.type,
      zone: instance.zone,
      market: instance.market,
      state: account.instances.state(instance),
      capacityReservationId: instance.capacityReservationId ?? null,
    })),
    volumes: account.volumes.all().map((volume) => {
      const attachmentStatus = account.volumes.attachmentStatus(volume);
      const attachment = volume.attachment;
      return {
        id: volume.id,
        zone: volume.zone,
        sizeGiB: volume.sizeGiB,
        status: account.volumes.status(volume),
        attachment:
          attachment && attachmentStatus
            ? {
                instanceId: attachment.instanceId,
                device: attachment.device,
                status: attachmentStatus,
                hostDevice: attachment.hostDevice?.path ?? null,
              }
            : null,
      };
    }),
    placementGroups: account.volumes.placementGroups.map((group) => ({
      name: group.name,
      region: group.region,
      strategy: group.strategy,
      instances: account.instances
        .all()
        .filter((instance) => instance.placementGroup === group.name && instance.region === group.region)
        .filter((instance) => ['pending', 'running'].includes(account.instances.state(instance)))
        .map((instance) => instance.id),
    })),
    capacityReservations: account.capacityReservations.all().map(reservationState),
    loopDevices: [...(disks?.attached() ?? new Map())].map(([volumeId, loop]) => ({
      volumeId,
      path: loop.path,
    })),
  });

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
            return json(reservationState(made), 201);
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
            return json(reservationState(changed));
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
    addCapacityReservation: (spec) => reservationState(account.capacityReservations.add(spec)),
    setCapacityReservationState: (id, wanted) =>
      reservationState(account.capacityReservations.setState(id, wanted)),
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
