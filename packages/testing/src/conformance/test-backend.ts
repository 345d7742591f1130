import { randomUUID } from 'node:crypto';
import {
  assertComputeMatchesPlugin,
  type Compute,
  type ComputeWithCreateInstance,
  type ComputeWithGateways,
  type GatewayReplicaConfiguration,
  type GatewayReplicaProvisioningData,
  hasCapability,
  type InstanceOfferWithAvailability,
  isNotImplemented,
  type JobProvisioningData,
  type Requirements,
} from '@dstack/core';
import { afterAll, describe, it } from 'vitest';
import {
  checkAgentAnswers,
  checkAgentRequiresToken,
  checkInvalidCredentialsError,
  checkNoCapacityError,
  checkTerminateSucceeds,
  localAgentOf,
  type PollOptions,
  pollUntilHostname,
} from './compute-checks.js';
import { checkConfiguratorRoundTrip } from './configurator-checks.js';
import { ConformanceLaunches, type LaunchMethod, terminate } from './conformance-launches.js';
import { ConformanceViolation, show } from './conformance-violation.js';
import { anyCpuOfferRequirements } from './job-fixtures.js';
import {
  checkOffersOrderedByPrice,
  checkOffersSatisfy,
  checkOffersWellFormed,
  deriveFilters,
} from './offer-checks.js';
import { checkDeclaredCapabilities } from './plugin-checks.js';
import { generateProjectSshKeys } from './project-ssh-keys.js';
import {
  conformanceValidateOptions,
  pluginTypeOf,
  requireCompute,
  type SuiteSetup,
  setUpSuite,
} from './suite-setup.js';
import {
  type BackendEmulator,
  type ConformanceCheck,
  DEFAULT_PROVISIONING_TEST_TIMEOUT_MS,
  type TestBackendOptions,
} from './test-backend-options.js';

type Needed = keyof ComputeWithCreateInstance | keyof ComputeWithGateways | 'validateConfig';

const OFFERS_TEST_TIMEOUT_MS = 30_000;

/**
 * Registers the backend contract suite (vitest `describe`/`it`): plugin and
 * capabilities, configurator, bad credentials, offers (shape, price order,
 * filters), capacity errors, provisioning-data polling (and the booted agent),
 * idempotent launches (same `instance_id`, same instance), idempotent termination. Tests of methods made with core's `notImplemented()`
 * are registered as todo; checks that do not apply are skipped with the reason
 * in their name. Call it at the top level of a test file.
 */
export function testBackend<E extends BackendEmulator = BackendEmulator>(
  options: TestBackendOptions<E>,
): void {
  const title = options.name ?? `backend "${pluginTypeOf(options.plugin)}" conformance`;
  describe(title, async () => {
    const setup = await setUpSuite(options);
    new ConformanceSuite(options, setup).register();
  });
}

/** The tests of one `testBackend` call and the instances they created. */
class ConformanceSuite<E extends BackendEmulator> {
  readonly #options: TestBackendOptions<E>;
  readonly #setup: SuiteSetup<E>;
  readonly #keys;
  readonly #requirements: Requirements;
  readonly #polling: PollOptions;
  readonly #provisioningTimeout: number;
  #unfilteredOffers: Promise<InstanceOfferWithAvailability[]> | undefined;
  /** The instance the provisioning test brought up, for the termination test. */
  #provisioned: JobProvisioningData | undefined;
  readonly #launches: ConformanceLaunches;

  constructor(options: TestBackendOptions<E>, setup: SuiteSetup<E>) {
    this.#options = options;
    this.#setup = setup;
    this.#keys = options.projectSshKeys ?? generateProjectSshKeys();
    this.#requirements = options.requirements ?? anyCpuOfferRequirements();
    this.#launches = new ConformanceLaunches(
      options,
      this.#keys,
      options.runJobRequirements ?? this.#requirements,
    );
    this.#polling = {
      maxAttempts: options.provisioning?.maxAttempts ?? 300,
      intervalMs: options.provisioning?.intervalMs ?? 100,
    };
    this.#provisioningTimeout = options.provisioningTestTimeoutMs ?? DEFAULT_PROVISIONING_TEST_TIMEOUT_MS;
  }

  /** Registers the tests, and the clean-up after them. */
  register(): void {
    afterAll(() => this.#cleanUp(), this.#provisioningTimeout);
    this.#registerPluginTests();
    this.#registerConfiguratorTests();
    this.#registerOfferTests();
    this.#registerCapacityTests();
    this.#registerProvisioningTests();
    this.#registerIdempotentLaunchTests();
    this.#registerTerminationTests();
    this.#registerGatewayTests();
  }

  /** Terminates what the tests left running (best effort); then stops the emulator. */
  async #cleanUp(): Promise<void> {
    const compute = this.#setup.compute;
    try {
      if (compute && !isNotImplemented(compute.terminateInstance)) {
        await this.#launches.terminateLeft(compute);
      }
    } finally {
      await this.#setup.dispose();
    }
  }

  /** Registers `name` as skipped, with the reason, when the options skip `id`; true when it did. */
  #skippedByOptions(id: ConformanceCheck, name: string): boolean {
    const skipReason = this.#options.skip?.[id];
    if (skipReason === undefined) return false;
    it.skip(`${name} (skipped: ${skipReason})`);
    return true;
  }

  #check(
    id: ConformanceCheck,
    name: string,
    needs: readonly Needed[],
    body: (compute: Compute) => Promise<void>,
    timeout?: number,
  ): void {
    if (this.#skippedByOptions(id, name)) return;
    const missing = this.#notImplemented(needs);
    if (missing.length > 0) {
      it.todo(`${name} (todo: ${missing.map((method) => `${method}()`).join(', ')} not implemented)`);
      return;
    }
    it(name, { timeout }, () => body(requireCompute(this.#setup)));
  }

  /** The needed methods that are `notImplemented()` stubs, on the Compute or its configurator. */
  #notImplemented(needs: readonly Needed[]): string[] {
    const { compute, configurator, notImplementedSteps } = this.#setup;
    // Every test but the credentials one works on the Compute, so it needs the steps that build it.
    const needsCompute = needs.length === 0 || needs.some((method) => method !== 'validateConfig');
    const missing: string[] = needsCompute
      ? notImplementedSteps.filter((step) => step !== 'validateConfig')
      : [];
    for (const method of needs) {
      const owner = method === 'validateConfig' ? configurator : compute;
      if (isNotImplemented((owner as unknown as Record<string, unknown> | undefined)?.[method])) {
        missing.push(method);
      }
    }
    return [...new Set(missing)];
  }

  #registerPluginTests(): void {
    const { plugin, pluginError } = this.#setup;
    const expected = this.#options.capabilities;
    // Descriptor checks need no Compute: they run even when the configurator is a stub.
    const descriptorCheck = (id: ConformanceCheck, name: string, body: () => void) => {
      if (!this.#skippedByOptions(id, name)) it(name, body);
    };
    descriptorCheck('plugin', 'the package exports a valid v1 backend plugin descriptor', () => {
      if (pluginError !== undefined) throw pluginError;
    });
    descriptorCheck(
      'capabilities',
      `the plugin declares exactly the capabilities [${expected.join(', ')}]`,
      () => {
        if (!plugin) throw pluginError;
        checkDeclaredCapabilities(plugin, expected);
      },
    );
    this.#check(
      'capabilities',
      "the Compute has the plugin's type, capabilities and required methods",
      [],
      async (compute) => {
        if (!plugin) throw pluginError;
        try {
          assertComputeMatchesPlugin(plugin, compute);
        } catch (error) {
          throw new ConformanceViolation('the Compute matches its plugin', (error as Error).message, {
            cause: error,
          });
        }
      },
    );
  }

  #registerConfiguratorTests(): void {
    this.#check(
      'configurator',
      'the configurator validates the valid config, stores it and builds the Compute from the record',
      [],
      async () => {
        const { plugin, configurator, record, config } = this.#setup;
        if (!plugin || !configurator || !record) return;
        checkConfiguratorRoundTrip(plugin, configurator, record, config);
      },
    );

    const invalid = this.#options.invalidCredentials;
    const name = invalid
      ? `validateConfig rejects invalid credentials with InvalidCredentialsError naming ${invalid.field.join('.')}`
      : 'validateConfig rejects invalid credentials with InvalidCredentialsError';
    if (invalid === false) {
      it.skip(`${name} (skipped: not applicable, the backend has no credentials)`);
      return;
    }
    this.#check('invalid-credentials', name, ['validateConfig'], async () => {
      const { configurator, context } = this.#setup;
      if (!configurator) throw this.#setup.pluginError;
      const badConfig = await invalid.create(context);
      const error = await configurator
        .validateConfig(badConfig, conformanceValidateOptions(this.#options))
        .then(
          () => undefined,
          (thrown: unknown) => thrown ?? new Error('validateConfig threw undefined'),
        );
      checkInvalidCredentialsError(error, invalid.field);
    });
  }

  #offers(compute: Compute): Promise<InstanceOfferWithAvailability[]> {
    this.#unfilteredOffers ??= compute.getOffers(this.#requirements);
    return this.#unfilteredOffers;
  }

  #registerOfferTests(): void {
    this.#check(
      'offers-shape',
      'getOffers returns well-formed offers of this backend for the default requirements',
      ['getOffers'],
      async (compute) => {
        const offers = await this.#offers(compute);
        checkOffersWellFormed(offers, compute.type);
        if (offers.length === 0) {
          throw new ConformanceViolation(
            'getOffers returns offers for the default requirements',
            'it returned none; give testBackend `requirements` the backend can satisfy',
          );
        }
      },
      OFFERS_TEST_TIMEOUT_MS,
    );
    this.#check(
      'offers-order',
      'getOffers orders offers by price, cheapest first',
      ['getOffers'],
      async (compute) => checkOffersOrderedByPrice(await this.#offers(compute)),
      OFFERS_TEST_TIMEOUT_MS,
    );
    const filters = [
      ['cpu', 'getOffers honours the minimum CPU count'],
      ['memory', 'getOffers honours the minimum memory'],
      ['max_price', 'getOffers honours max_price'],
      ['spot', 'getOffers honours spot (spot only, on-demand only)'],
      ['gpu', 'getOffers honours the GPU count'],
    ] as const;
    for (const [kind, name] of filters) {
      this.#check(
        'offers-filters',
        name,
        ['getOffers'],
        async (compute) => {
          const unfiltered = await this.#offers(compute);
          for (const filter of deriveFilters(unfiltered, this.#requirements, kind)) {
            const offers = await compute.getOffers(filter.requirements);
            checkOffersWellFormed(offers, compute.type);
            checkOffersSatisfy(offers, filter.requirements, filter.what);
            if (filter.expectsOffers && offers.length === 0) {
              throw new ConformanceViolation(
                `getOffers honours ${filter.what}`,
                'it returned no offer although some of the unfiltered offers satisfy the filter',
              );
            }
          }
        },
        OFFERS_TEST_TIMEOUT_MS,
      );
    }
  }

  /** `createInstance` for backends with the capability, else `runJob`. */
  #launchMethod(): LaunchMethod {
    const compute = this.#setup.compute;
    return compute && hasCapability(compute, 'create-instance') ? 'createInstance' : 'runJob';
  }

  #registerCapacityTests(): void {
    const emulator = this.#setup.context.emulator;
    const methods: LaunchMethod[] = this.#options.capabilities.includes('create-instance')
      ? ['runJob', 'createInstance']
      : ['runJob'];
    for (const method of methods) {
      const name = `${method} turns a provider capacity error into NoCapacityError`;
      if (
        typeof emulator.failNextLaunchWithNoCapacity !== 'function' &&
        this.#options.skip?.['no-capacity'] === undefined
      ) {
        const reason = this.#options.emulator
          ? 'the emulator has no failNextLaunchWithNoCapacity hook'
          : 'no emulator to inject a capacity fault';
        it.skip(`${name} (skipped: ${reason})`);
        continue;
      }
      this.#check(
        'no-capacity',
        name,
        ['getOffers', method],
        async (compute) => {
          await emulator.failNextLaunchWithNoCapacity?.(1);
          const error = await this.#launches
            .launch(compute, method, this.#launches.next(), {
              firstOfferOnly: true,
            })
            .then(
              async (data) => {
                await this.#launches.terminate(compute, data).catch(() => undefined);
                return undefined;
              },
              (thrown: unknown) => thrown ?? new Error(`${method} threw undefined`),
            );
          checkNoCapacityError(error, method);
        },
        this.#provisioningTimeout,
      );
    }
  }

  #registerProvisioningTests(): void {
    const method = this.#launchMethod();
    this.#check(
      'provisioning',
      `${method} returns at once and updateProvisioningData fills hostname within ${this.#polling.maxAttempts} calls`,
      ['getOffers', method, 'updateProvisioningData'],
      async (compute) => {
        const launch = this.#launches.next();
        const started = await this.#launches.launch(compute, method, launch);
        const ready = await pollUntilHostname(compute, started, this.#keys, this.#polling);
        this.#launches.track(ready);
        this.#provisioned = ready;
        const kind = this.#setup.plugin?.computeKind ?? 'vm';
        const agent = this.#setup.context.emulator.agentOf?.(ready.instance_id) ?? localAgentOf(ready, kind);
        if (agent) {
          await checkAgentAnswers(agent);
          await checkAgentRequiresToken(agent, launch.agentToken);
        }
      },
      this.#provisioningTimeout,
    );
    if (method === 'createInstance') {
      this.#check(
        'provisioning',
        "runJob starts the job's instance and returns its provisioning data",
        ['getOffers', 'runJob', 'terminateInstance'],
        async (compute) => {
          const started = await this.#launches.launch(compute, 'runJob');
          await this.#launches.terminate(compute, started);
        },
        this.#provisioningTimeout,
      );
    }
  }

  /**
   * The server retries a launch whose result it never stored (it died mid-call) with the same
   * dstack instance id: the backend must return the machine it launched, not a second one.
   */
  #registerIdempotentLaunchTests(): void {
    const method = this.#launchMethod();
    const emulator = this.#setup.context.emulator;
    const counted = typeof emulator.launchedMachineCount === 'function';
    this.#check(
      'launch-idempotent',
      `a second ${method} with the same instance_id returns the same instance${counted ? ' and launches no machine' : ''}`,
      ['getOffers', method, 'terminateInstance'],
      async (compute) => {
        const launch = this.#launches.next();
        const machinesBefore = counted ? await emulator.launchedMachineCount?.() : undefined;
        const first = await this.#launches.launch(compute, method, launch);
        const second = await this.#launches.launch(compute, method, launch);
        try {
          if (second.instance_id !== first.instance_id) {
            throw new ConformanceViolation(
              `a second ${method} with the same instance_id returns the instance the first launched`,
              `the first returned instance ${first.instance_id}, the second ${second.instance_id}`,
            );
          }
          if (machinesBefore !== undefined) {
            const launched = ((await emulator.launchedMachineCount?.()) ?? 0) - machinesBefore;
            if (launched !== 1) {
              throw new ConformanceViolation(
                `a second ${method} with the same instance_id launches no machine`,
                `the provider launched ${launched} machines for two calls with one instance_id`,
              );
            }
          }
        } finally {
          await this.#launches.terminate(compute, first).catch(() => undefined);
          await this.#launches.terminate(compute, second).catch(() => undefined);
        }
      },
      this.#provisioningTimeout,
    );
  }

  #registerTerminationTests(): void {
    const method = this.#launchMethod();
    this.#check(
      'terminate-idempotent',
      'terminateInstance succeeds when called twice on the same instance',
      ['getOffers', method, 'terminateInstance'],
      async (compute) => {
        const data = this.#provisioned ?? (await this.#launches.launch(compute, method));
        await checkTerminateSucceeds(
          () => terminate(compute, data),
          'twice on a created instance',
          2,
          this.#polling,
        );
        this.#launches.forget(data.instance_id);
      },
      this.#provisioningTimeout,
    );
    const emulator = this.#setup.context.emulator;
    if (typeof emulator.removeInstance === 'function') {
      this.#check(
        'terminate-gone',
        'terminateInstance succeeds on an instance the provider already removed',
        ['getOffers', method, 'terminateInstance'],
        async (compute) => {
          const data = await this.#launches.launch(compute, method);
          await emulator.removeInstance?.(data.instance_id);
          await checkTerminateSucceeds(
            () => terminate(compute, data),
            'on an instance already removed',
            1,
            this.#polling,
          );
          this.#launches.forget(data.instance_id);
        },
        this.#provisioningTimeout,
      );
    } else {
      this.#check(
        'terminate-gone',
        'terminateInstance succeeds on an instance id that never existed',
        ['getOffers', 'terminateInstance'],
        async (compute) => {
          const [offer] = await this.#offers(compute);
          const region = offer?.region ?? 'unknown-region';
          await checkTerminateSucceeds(
            () => compute.terminateInstance('dstack-conformance-never-existed-0', region, null),
            'on an instance id that never existed',
            1,
            this.#polling,
          );
        },
        this.#provisioningTimeout,
      );
    }
  }

  /**
   * Backends with the `gateways` capability: `createGatewayReplica` returns a running instance
   * with its address, a second call for the same `instance_name` returns the same instance, and
   * `terminateGatewayReplica` succeeds twice.
   */
  #registerGatewayTests(): void {
    if (!this.#options.capabilities.includes('gateways')) return;
    this.#check(
      'gateways',
      'createGatewayReplica launches one instance per instance_name, with its address; terminating it twice succeeds',
      ['getOffers', 'createGatewayReplica', 'terminateGatewayReplica'],
      async (compute) => {
        if (!hasCapability(compute, 'gateways')) throw new Error('the Compute lacks the gateways capability');
        const region = this.#options.gateway?.region ?? (await this.#offers(compute))[0]?.region;
        if (!region) throw new Error('no offer to take a region from; set options.gateway.region');
        const configuration: GatewayReplicaConfiguration = {
          project_name: 'conformance',
          instance_name: `conformance-gateway-${randomUUID().slice(0, 8)}`,
          backend: compute.type,
          region,
          instance_type: this.#options.gateway?.instanceType ?? null,
          public_ip: true,
          ssh_key_pub: this.#keys.publicKey,
          agent_token: randomUUID(),
          certificate: null,
        };
        const rule =
          'createGatewayReplica returns a running instance with its address, one per instance_name';
        const first = await compute.createGatewayReplica(configuration);
        try {
          if (!first.instance_id || !first.ip_address || first.region !== region) {
            throw new ConformanceViolation(rule, `got ${show(first)} for region ${region}`);
          }
          const again = await compute.createGatewayReplica(configuration);
          if (again.instance_id !== first.instance_id) {
            throw new ConformanceViolation(
              rule,
              `a second launch of ${configuration.instance_name} made ${again.instance_id}, not ${first.instance_id}`,
            );
          }
        } finally {
          await terminateGateway(compute, first, configuration);
        }
        await terminateGateway(compute, first, configuration);
      },
      this.#provisioningTimeout,
    );
  }
}

/** Terminates the instance `data` describes. */
function terminateGateway(
  compute: ComputeWithGateways,
  data: GatewayReplicaProvisioningData,
  configuration: GatewayReplicaConfiguration,
): Promise<void> {
  return compute.terminateGatewayReplica(data.instance_id, configuration, data.backend_data);
}
