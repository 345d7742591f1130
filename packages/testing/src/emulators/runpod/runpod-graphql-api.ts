/**
 * RunPod's GraphQL API over the emulator's data, pods and stock, executed by graphql-js against
 * {@link RUNPOD_GRAPHQL_SCHEMA}: a query is parsed, validated and run as RunPod's server does,
 * so inline literals (dstack's queries) and variables (this project's) both work, and an error in
 * a resolver is a GraphQL error in `errors` beside `data`, with HTTP 200.
 */
import { randomBytes } from 'node:crypto';
import {
  buildSchema,
  type DocumentNode,
  type ExecutionResult,
  execute,
  GraphQLError,
  Kind,
  parse,
  validate,
} from 'graphql';
import type { RunpodCpuFlavorSpec, RunpodEmulatorData, RunpodGpuTypeSpec } from './runpod-emulator-data.js';
import { isSecureCloudLocation } from './runpod-emulator-data.js';
import type { RunpodEmulatorFaults } from './runpod-emulator-faults.js';
import { RUNPOD_GRAPHQL_SCHEMA } from './runpod-graphql-schema.js';
import type { RunpodPod, RunpodPodRequest, RunpodPods } from './runpod-pods.js';
import { RUNPOD_NO_CAPACITY_MESSAGE, type RunpodStock, stockStatus } from './runpod-stock.js';

const schema = buildSchema(RUNPOD_GRAPHQL_SCHEMA);

/** The fields anyone may ask without a key: what gpuhunt's collector asks. */
export const RUNPOD_PUBLIC_FIELDS: ReadonlySet<string> = new Set([
  'gpuTypes',
  'dataCenters',
  'countryCodes',
  'cpuFlavors',
  '__typename',
  '__schema',
  '__type',
]);

/** A query that does not parse or validate: RunPod answers 400 with the errors. */
export class RunpodGraphqlRequestError extends Error {
  constructor(readonly errors: readonly GraphQLError[]) {
    super(errors.map((error) => error.message).join('; '));
  }
}

/** A parsed, validated request and its top-level fields (what faults and the key check look at). */
export interface RunpodGraphqlRequest {
  readonly document: DocumentNode;
  readonly operations: readonly string[];
}

export function parseRunpodGraphqlRequest(query: string): RunpodGraphqlRequest {
  let document: DocumentNode;
  try {
    document = parse(query);
  } catch (error) {
    throw new RunpodGraphqlRequestError([error as GraphQLError]);
  }
  const errors = validate(schema, document);
  if (errors.length > 0) throw new RunpodGraphqlRequestError(errors);
  const operations: string[] = [];
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    for (const selection of definition.selectionSet.selections) {
      if (selection.kind === Kind.FIELD) operations.push(selection.name.value);
    }
  }
  return { document, operations };
}

export interface RunpodGraphqlApiOptions {
  readonly data: RunpodEmulatorData;
  readonly pods: RunpodPods;
  readonly stock: RunpodStock;
  readonly faults: RunpodEmulatorFaults;
  readonly email: string;
}

interface RegistryAuth {
  readonly id: string;
  readonly name: string;
  readonly username: string;
}

type Input = Record<string, unknown>;

function fail(message: string): never {
  throw new GraphQLError(message);
}

export class RunpodGraphqlApi {
  readonly registryAuths: RegistryAuth[] = [];
  readonly #options: RunpodGraphqlApiOptions;
  readonly #root: Record<string, unknown>;

  constructor(options: RunpodGraphqlApiOptions) {
    this.#options = options;
    this.#root = this.#rootValue();
  }

  async execute(request: RunpodGraphqlRequest, variables: Input | undefined): Promise<ExecutionResult> {
    return await execute({
      schema,
      document: request.document,
      rootValue: this.#root,
      variableValues: variables,
    });
  }

  /** Terminates the pod: its container goes and its GPUs are free again. */
  async terminate(pod: RunpodPod): Promise<void> {
    const { request } = pod;
    if (request.gpuTypeId !== null)
      this.#options.stock.release(request.gpuTypeId, request.location, request.gpuCount);
    await this.#options.pods.terminate(pod.id);
  }

  /** The pod as `pod` and `myself.pods` answer it. */
  podView(pod: RunpodPod): Record<string, unknown> {
    const { pods } = this.#options;
    const { request } = pod;
    const running =
      pod.desiredStatus === 'RUNNING' && pod.container.kind === 'running' ? pod.container : null;
    const gpuType = this.#gpuType(request.gpuTypeId);
    return {
      id: pod.id,
      name: request.name,
      imageName: request.imageName,
      desiredStatus: pod.desiredStatus,
      lastStatusChange: pod.lastStatusChange,
      costPerHr: request.costPerHr,
      gpuCount: request.gpuCount,
      vcpuCount: request.vcpuCount,
      memoryInGb: request.memoryInGb,
      containerDiskInGb: request.containerDiskInGb,
      volumeInGb: 0,
      volumeMountPath: null,
      dockerArgs: request.dockerArgs,
      dockerId: running ? `${pod.id}-docker` : null,
      env: request.env.map(({ key, value }) => `${key}=${value}`),
      port: null,
      ports: request.ports,
      podType: request.bidPerGpu === null ? 'RESERVED' : 'INTERRUPTABLE',
      machineId: pod.machineId,
      uptimeSeconds: pods.uptimeSeconds(pod),
      clusterIp: null,
      containerRegistryAuthId: request.containerRegistryAuthId,
      runtime: running
        ? {
            uptimeInSeconds: pods.uptimeSeconds(pod),
            ports: Object.entries(running.ports).flatMap(([key, bindings]) => {
              const [privatePort, type] = key.split('/');
              return bindings.map((binding) => ({
                ip: binding.HostIp === '0.0.0.0' ? '127.0.0.1' : binding.HostIp,
                isIpPublic: true,
                privatePort: Number(privatePort),
                publicPort: Number(binding.HostPort),
                type,
              }));
            }),
          }
        : null,
      machine: {
        podHostId: `${pod.id}-${pod.machineId}`,
        gpuDisplayName: gpuType?.displayName ?? null,
        dataCenterId: isSecureCloudLocation(request.location) ? request.location : null,
        location: request.location,
      },
    };
  }

  #gpuType(id: string | null): RunpodGpuTypeSpec | undefined {
    return id === null ? undefined : this.#options.data.gpuTypes.find((gpuType) => gpuType.id === id);
  }

  #rootValue(): Record<string, unknown> {
    const { data, pods } = this.#options;
    return {
      myself: () => ({
        id: 'user_emulator',
        authId: 'auth0|emulator',
        email: this.#options.email,
        pods: () => pods.all().map((pod) => this.podView(pod)),
        containerRegistryCreds: () => this.registryAuths.map(({ id, name }) => ({ id, name })),
      }),
      pod: ({ input }: { input?: { podId: string } }) => {
        const pod = input ? pods.get(input.podId) : undefined;
        return pod ? this.podView(pod) : null;
      },
      gpuTypes: ({ input }: { input?: Input | null }) =>
        data.gpuTypes
          .filter((gpuType) => (input?.cluster === true ? gpuType.cluster !== undefined : true))
          .filter((gpuType) => (typeof input?.id === 'string' ? gpuType.id === input.id : true))
          .map((gpuType) => this.#gpuTypeView(gpuType)),
      dataCenters: () =>
        data.dataCenters.map(({ id, name, listed, countryCode }) => ({
          id,
          name,
          listed,
          location: countryCode,
        })),
      countryCodes: () => [...data.countryCodes],
      cpuFlavors: () => data.cpuFlavors.map((flavor) => this.#cpuFlavorView(flavor)),
      podFindAndDeployOnDemand: ({ input }: { input?: Input | null }) =>
        this.podView(this.#deployGpuPod(input ?? fail('input: required'), null)),
      podRentInterruptable: ({ input }: { input: Input }) =>
        this.podView(this.#deployGpuPod(input, Number(input.bidPerGpu))),
      deployCpuPod: ({ input }: { input: Input }) => this.podView(this.#deployCpuPod(input)),
      podTerminate: async ({ input }: { input?: { podId: string } | null }) => {
        const pod = input ? pods.get(input.podId) : undefined;
        if (!pod) fail('pod not found to terminate');
        await this.terminate(pod);
        return null;
      },
      saveRegistryAuth: ({ input }: { input: { name: string; username: string } }) => {
        if (this.registryAuths.some((auth) => auth.name === input.name)) {
          fail(`Registry auth with name ${input.name} already exists`);
        }
        const auth = { id: `${randomBytes(12).toString('hex')}`, name: input.name, username: input.username };
        this.registryAuths.push(auth);
        return { id: auth.id, name: auth.name };
      },
      deleteRegistryAuth: ({ registryAuthId }: { registryAuthId: string }) => {
        const index = this.registryAuths.findIndex((auth) => auth.id === registryAuthId);
        if (index === -1) fail('Registry auth not found');
        if (pods.all().some((pod) => pod.request.containerRegistryAuthId === registryAuthId)) {
          fail('Registry auth is in use by a pod');
        }
        this.registryAuths.splice(index, 1);
        return null;
      },
    };
  }

  #gpuTypeView(gpuType: RunpodGpuTypeSpec): Record<string, unknown> {
    const { data, stock } = this.#options;
    return {
      id: gpuType.id,
      displayName: gpuType.displayName,
      manufacturer: gpuType.manufacturer,
      memoryInGb: gpuType.memoryInGb,
      maxGpuCount: gpuType.maxGpuCount,
      maxGpuCountCommunityCloud: gpuType.communityPrice === null ? 0 : gpuType.maxGpuCount,
      maxGpuCountSecureCloud: gpuType.securePrice === null ? 0 : gpuType.maxGpuCount,
      minPodGpuCount: 1,
      secureCloud: gpuType.securePrice !== null,
      communityCloud: gpuType.communityPrice !== null,
      securePrice: gpuType.securePrice,
      communityPrice: gpuType.communityPrice,
      secureSpotPrice: gpuType.secureSpotPrice,
      communitySpotPrice: gpuType.communitySpotPrice,
      oneMonthPrice: null,
      threeMonthPrice: null,
      sixMonthPrice: null,
      clusterPrice: gpuType.cluster?.pricePerGpu ?? null,
      nodeGroupDatacenters: (gpuType.cluster?.dataCenters ?? []).map((id) => {
        const center = data.dataCenters.find((each) => each.id === id);
        return { id, name: id, listed: center?.listed ?? true, location: center?.countryCode ?? null };
      }),
      lowestPrice: ({ input }: { input?: Input | null }) => {
        const count = typeof input?.gpuCount === 'number' ? input.gpuCount : 1;
        const location =
          typeof input?.dataCenterId === 'string'
            ? input.dataCenterId
            : typeof input?.countryCode === 'string'
              ? input.countryCode
              : null;
        const secure = input?.secureCloud !== false && (location === null || isSecureCloudLocation(location));
        const price = secure ? gpuType.securePrice : gpuType.communityPrice;
        const free =
          location === null
            ? Math.max(0, ...stock.locationsWith(gpuType.id, 0).map((each) => stock.free(gpuType.id, each)))
            : stock.free(gpuType.id, location);
        const status = count <= gpuType.maxGpuCount && price !== null ? stockStatus(free, count) : null;
        return {
          gpuName: gpuType.displayName,
          gpuTypeId: gpuType.id,
          minimumBidPrice:
            status === null ? null : secure ? gpuType.secureSpotPrice : gpuType.communitySpotPrice,
          uninterruptablePrice: status === null ? null : price,
          minVcpu: status === null ? null : gpuType.vcpuPerGpu * count,
          minMemory: status === null ? null : gpuType.memoryGbPerGpu * count,
          stockStatus: status,
          compliance: [],
          countryCode: location === null || isSecureCloudLocation(location) ? null : location,
        };
      },
    };
  }

  #cpuFlavorView(flavor: RunpodCpuFlavorSpec): Record<string, unknown> {
    return {
      id: flavor.id,
      displayName: flavor.displayName,
      groupId: flavor.groupId,
      minVcpu: flavor.minVcpu,
      maxVcpu: flavor.maxVcpu,
      ramMultiplier: flavor.ramMultiplier,
      diskLimitPerVcpu: flavor.diskLimitPerVcpu,
      specifics: ({ input }: { input?: { dataCenterId?: string } | null }) => {
        const price = input?.dataCenterId ? flavor.securePriceByDataCenter[input.dataCenterId] : undefined;
        return {
          stockStatus: price === undefined ? null : 'High',
          securePrice: price ?? null,
          slsPrice: price === undefined ? null : Math.round(price * 1.2 * 1000) / 1000,
        };
      },
    };
  }

  /** `podFindAndDeployOnDemand` / `podRentInterruptable`: the GPUs taken from the chosen location. */
  #deployGpuPod(input: Input, bidPerGpu: number | null): RunpodPod {
    const { stock, faults } = this.#options;
    const imageName = requiredString(input, 'imageName');
    const gpuTypeId = requiredString(input, 'gpuTypeId');
    const gpuType = this.#gpuType(gpuTypeId) ?? fail(`gpuTypeId: no GPU type ${gpuTypeId}`);
    const gpuCount = typeof input.gpuCount === 'number' ? input.gpuCount : 1;
    if (gpuCount < 1 || gpuCount > gpuType.maxGpuCount) {
      fail(`gpuCount: ${gpuCount} is not between 1 and ${gpuType.maxGpuCount} for ${gpuTypeId}`);
    }
    const cloudType = input.cloudType === 'COMMUNITY' ? 'COMMUNITY' : 'SECURE';
    const price = cloudType === 'SECURE' ? gpuType.securePrice : gpuType.communityPrice;
    const spotPrice = cloudType === 'SECURE' ? gpuType.secureSpotPrice : gpuType.communitySpotPrice;
    if (faults.fire('NO_CAPACITY', { gpuTypeId })) fail(RUNPOD_NO_CAPACITY_MESSAGE);
    const wanted = cloudType === 'SECURE' ? input.dataCenterId : input.countryCode;
    const location = stock
      .locationsWith(gpuTypeId, gpuCount)
      .find(
        (each) =>
          isSecureCloudLocation(each) === (cloudType === 'SECURE') &&
          (typeof wanted !== 'string' || wanted === each),
      );
    const vcpuCount = gpuType.vcpuPerGpu * gpuCount;
    const memoryInGb = gpuType.memoryGbPerGpu * gpuCount;
    const fits =
      (typeof input.minVcpuCount !== 'number' || input.minVcpuCount <= vcpuCount) &&
      (typeof input.minMemoryInGb !== 'number' || input.minMemoryInGb <= memoryInGb);
    if (location === undefined || price === null || !fits) fail(RUNPOD_NO_CAPACITY_MESSAGE);
    if (bidPerGpu !== null && (spotPrice === null || bidPerGpu < spotPrice)) {
      fail(`Your bid of $${bidPerGpu}/GPU/hr is below the minimum bid of $${spotPrice}/GPU/hr.`);
    }
    stock.take(gpuTypeId, location, gpuCount);
    return this.#options.pods.create({
      ...this.#commonRequest(input, imageName),
      gpuTypeId,
      cpuInstanceId: null,
      gpuCount,
      vcpuCount,
      memoryInGb,
      cloudType,
      location,
      costPerHr: Math.round((bidPerGpu ?? price) * gpuCount * 1000) / 1000,
      bidPerGpu,
    });
  }

  /** `deployCpuPod`: `instanceId` `<flavor>-<vcpus>-<memory>` in a Secure Cloud data center. */
  #deployCpuPod(input: Input): RunpodPod {
    const imageName = requiredString(input, 'imageName');
    const instanceId = requiredString(input, 'instanceId');
    const match = /^(.+)-(\d+)-(\d+)$/.exec(instanceId);
    const flavor = match ? this.#options.data.cpuFlavors.find((each) => each.id === match[1]) : undefined;
    if (!match || !flavor) fail(`instanceId: no CPU instance ${instanceId}`);
    const vcpuCount = Number(match[2]);
    const memoryInGb = Number(match[3]);
    if (
      vcpuCount < flavor.minVcpu ||
      vcpuCount > flavor.maxVcpu ||
      memoryInGb !== vcpuCount * flavor.ramMultiplier
    ) {
      fail(`instanceId: ${instanceId} is not a size of ${flavor.id}`);
    }
    if (this.#options.faults.fire('NO_CAPACITY', { gpuTypeId: instanceId })) fail(RUNPOD_NO_CAPACITY_MESSAGE);
    const dataCenterId = typeof input.dataCenterId === 'string' ? input.dataCenterId : undefined;
    const location = dataCenterId ?? Object.keys(flavor.securePriceByDataCenter)[0];
    const basePrice = location === undefined ? undefined : flavor.securePriceByDataCenter[location];
    if (location === undefined || basePrice === undefined) fail(RUNPOD_NO_CAPACITY_MESSAGE);
    const cost = Math.round(((basePrice * vcpuCount) / flavor.minVcpu) * 1000) / 1000;
    if (typeof input.deployCost === 'number' && input.deployCost + 1e-9 < cost) {
      fail(`deployCost: the pod costs $${cost}/hr, more than the $${input.deployCost}/hr given`);
    }
    const request = this.#commonRequest(input, imageName);
    if (request.containerDiskInGb > vcpuCount * flavor.diskLimitPerVcpu) {
      fail(`containerDiskInGb: at most ${vcpuCount * flavor.diskLimitPerVcpu} GB for ${instanceId}`);
    }
    return this.#options.pods.create({
      ...request,
      gpuTypeId: null,
      cpuInstanceId: instanceId,
      gpuCount: 0,
      vcpuCount,
      memoryInGb,
      cloudType: 'SECURE',
      location,
      costPerHr: cost,
      bidPerGpu: null,
    });
  }

  /** The fields every deploy shares. */
  #commonRequest(
    input: Input,
    imageName: string,
  ): Pick<
    RunpodPodRequest,
    'name' | 'imageName' | 'containerDiskInGb' | 'dockerArgs' | 'ports' | 'env' | 'containerRegistryAuthId'
  > {
    const authId = typeof input.containerRegistryAuthId === 'string' ? input.containerRegistryAuthId : null;
    if (authId !== null && !this.registryAuths.some((auth) => auth.id === authId)) {
      fail(`containerRegistryAuthId: no registry auth ${authId}`);
    }
    const dockerArgs = typeof input.dockerArgs === 'string' ? input.dockerArgs : '';
    if (dockerArgs.trim().startsWith('{')) {
      try {
        JSON.parse(dockerArgs);
      } catch {
        fail('dockerArgs: not valid JSON');
      }
    }
    return {
      name: typeof input.name === 'string' ? input.name : '',
      imageName,
      containerDiskInGb: typeof input.containerDiskInGb === 'number' ? input.containerDiskInGb : 20,
      dockerArgs,
      ports: typeof input.ports === 'string' ? input.ports : '',
      env: Array.isArray(input.env) ? (input.env as { key: string; value: string }[]) : [],
      containerRegistryAuthId: authId,
    };
  }
}

function requiredString(input: Input, field: string): string {
  const value = input[field];
  if (typeof value !== 'string' || value.trim() === '') fail(`${field}: required`);
  return value;
}
