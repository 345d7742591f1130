import type { BackendPlugin, Capability, ProjectSshKeys, Requirements } from '@dstack/core';

/** A value or a promise of it. */
export type MaybePromise<T> = T | Promise<T>;

/** Where an agent booted for an emulated instance listens (see `bootLocalAgent`). */
export interface EmulatedAgentAddress {
  /** `vm`: a shim (VM backends); `container`: a runner (container backends). */
  readonly kind: 'vm' | 'container';
  /** `http://127.0.0.1:<port>` of the agent's HTTP API. */
  readonly url: string;
}

/**
 * A provider emulator started for the suite. Only `close()` is required; the
 * suite runs the tests that need a fault hook only when the emulator has it,
 * and reports the others as skipped with the missing hook named.
 */
export interface BackendEmulator {
  /** Stops the emulator and everything it started (agents included). Called once, after the suite. */
  close(): Promise<void>;
  /**
   * Makes the next `count` instance launches fail the way the provider reports
   * a capacity shortage (e.g. EC2 `InsufficientInstanceCapacity`). Default count 1.
   * Enables the "capacity error is NoCapacityError" test.
   */
  failNextLaunchWithNoCapacity?(count?: number): MaybePromise<void>;
  /**
   * Deletes an instance behind the backend's back, as if the provider had
   * reclaimed it. Enables terminating an instance that is already gone; without
   * it the suite terminates an id that never existed.
   */
  removeInstance?(instanceId: string): MaybePromise<void>;
  /**
   * The real agent the emulator booted for an instance (see `bootLocalAgent`),
   * or undefined when it booted none. When known, the suite checks that the
   * agent answers its healthcheck once provisioning data has a `hostname`.
   * Without this hook the suite looks for a loopback `hostname` with
   * `agent_ports.shim` (or `agent_ports.runner`) in `backend_data`.
   */
  agentOf?(instanceId: string): EmulatedAgentAddress | undefined;
  /**
   * How many machines the emulated provider has launched so far (terminated ones included).
   * When known, the idempotent-launch check also checks that a second launch with the same
   * `instance_id` launched no machine.
   */
  launchedMachineCount?(): MaybePromise<number>;
}

/** What `create` and `invalidCredentials.create` receive. */
export interface TestBackendContext<E extends BackendEmulator = BackendEmulator> {
  /** The running emulator; a no-op emulator when `options.emulator` is not set. */
  readonly emulator: E;
  /** A directory made for the suite (e.g. for instance homes), removed after it. */
  readonly temporaryDirectory: string;
}

/** How the suite checks that bad credentials are rejected by `validateConfig`. */
export interface InvalidCredentialsCheck<E extends BackendEmulator = BackendEmulator> {
  /** A user-facing backend config (`backendConfigWithCreds`) whose credentials the provider rejects. */
  create(context: TestBackendContext<E>): MaybePromise<unknown>;
  /**
   * The field path `InvalidCredentialsError.fields` must include, e.g.
   * `['creds', 'api_key']`.
   */
  field: readonly string[];
}

/** How many times the suite polls `updateProvisioningData`, and how often. */
export interface ProvisioningPolling {
  /** Calls before the suite gives up on `hostname`. Default 300. */
  maxAttempts?: number;
  /** Pause between calls, in milliseconds. Default 100. */
  intervalMs?: number;
}

/** `projectName` when not set. */
export const DEFAULT_TEST_PROJECT_NAME = 'test-project';
/** `provisioningTestTimeoutMs` when not set. */
export const DEFAULT_PROVISIONING_TEST_TIMEOUT_MS = 120_000;

/** The contract checks of `testBackend`, by name (for `skip`). */
export const CONFORMANCE_CHECKS = [
  'plugin',
  'capabilities',
  'configurator',
  'invalid-credentials',
  'offers-shape',
  'offers-order',
  'offers-filters',
  'no-capacity',
  'provisioning',
  'launch-idempotent',
  'terminate-idempotent',
  'terminate-gone',
  'gateways',
] as const;
export type ConformanceCheck = (typeof CONFORMANCE_CHECKS)[number];

/**
 * Settings of `testBackend`, the contract suite every backend package runs:
 *
 * ```ts
 * testBackend({
 *   plugin: awsBackendPlugin,
 *   capabilities: ['create-instance', 'privileged', 'instance-volumes'],
 *   emulator: () => startEc2Emulator(),
 *   create: ({ emulator }) => ({ type: 'aws', endpoint: emulator.url, creds: { type: 'access_key', ... } }),
 *   invalidCredentials: {
 *     create: ({ emulator }) => ({ type: 'aws', endpoint: emulator.url, creds: { type: 'access_key', access_key: 'bad', secret_key: 'bad' } }),
 *     field: ['creds', 'access_key'],
 *   },
 * });
 * ```
 */
export interface TestBackendOptions<E extends BackendEmulator = BackendEmulator> {
  /**
   * The backend's plugin descriptor (its package's default export), or the
   * module namespace. The suite checks it with `assertBackendPlugin`.
   */
  plugin: BackendPlugin | { readonly default: BackendPlugin } | object;
  /** The npm package, for error messages. Default `@dstack/backend-<type>`. */
  packageName?: string;
  /** The capabilities the backend must declare, on the descriptor and on its Compute. */
  capabilities: readonly Capability[];
  /** Starts the provider emulator before the suite; it is closed after. Default: no emulator. */
  emulator?: () => Promise<E>;
  /**
   * A user-facing backend config WITH valid credentials (`backendConfigWithCreds`).
   * The suite takes it through the plugin's configurator (`validateConfig` →
   * `createBackend` → `getCompute`), so the configurator is tested too.
   */
  create: (context: TestBackendContext<E>) => MaybePromise<unknown>;
  /**
   * A config with credentials the provider rejects and the field the error must
   * name; or `false` for a backend without credentials (e.g. local), which
   * reports the check as skipped.
   */
  invalidCredentials: InvalidCredentialsCheck<E> | false;
  /** The project `createBackend` is called for. Default `test-project`. */
  projectName?: string;
  /**
   * Passed to `validateConfig`, with `origin: 'server_config'` and `customEndpointsAllowed: true`
   * (the suite's config is the test author's own, as config.yml is the admin's). Default true.
   */
  defaultCredsEnabled?: boolean;
  /**
   * Requirements of the offer tests; filters are derived from the offers they
   * return. Default: any offer with at least 1 CPU (no GPU, memory, disk,
   * price or spot constraint).
   */
  requirements?: Requirements;
  /**
   * Requirements of the job `runJob` starts; the cheapest available offer for
   * them is used. Default: `requirements`.
   */
  runJobRequirements?: Requirements;
  /**
   * `RunJobParams.runnerDownloadUrl` of the suite's launches (container backends' entrypoints fetch
   * the runner there). Default `CONFORMANCE_RUNNER_DOWNLOAD_URL`, where nothing answers.
   */
  runnerDownloadUrl?: string;
  /**
   * The job's image in the suite's launches. Default `CONFORMANCE_JOB_IMAGE` (dstack's base
   * image); a backend tested against a real engine that cannot pull gives a local tag.
   */
  jobImage?: string;
  /** The project SSH keys given to `runJob` and `updateProvisioningData`. Default: a fresh ed25519 pair. */
  projectSshKeys?: ProjectSshKeys;
  /** Polling of `updateProvisioningData` until `hostname` is set. */
  provisioning?: ProvisioningPolling;
  /**
   * The gateway launched by the `gateways` check (backends with that capability): its instance
   * type (default: the backend's own default) and region (default: the first offer's).
   */
  gateway?: { instanceType?: string; region?: string };
  /**
   * Checks not applicable to this backend, each with the reason (reported as a
   * skipped test named with the reason). Default: none.
   */
  skip?: Partial<Record<ConformanceCheck, string>>;
  /** Timeout of each test that provisions an instance, in milliseconds. Default 120000. */
  provisioningTestTimeoutMs?: number;
  /** The suite's title. Default `backend "<type>" conformance`. */
  name?: string;
}
