import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type BackendPlugin,
  type BackendRecord,
  type Compute,
  type Configurator,
  isNotImplemented,
  type StoredBackendRecord,
  type ValidateConfigOptions,
} from '@dstack/core';
import { ConformanceViolation, show } from './conformance-violation.js';
import { checkPlugin } from './plugin-checks.js';
import {
  type BackendEmulator,
  DEFAULT_TEST_PROJECT_NAME,
  type TestBackendContext,
  type TestBackendOptions,
} from './test-backend-options.js';

/** The configurator steps the suite takes to reach a Compute, in order. */
export type SetupStep = 'create' | 'validateConfig' | 'createBackend' | 'getCompute';

/** What the suite built before registering its tests (at collection time). */
export interface SuiteSetup<E extends BackendEmulator> {
  readonly plugin: BackendPlugin | undefined;
  readonly pluginError: unknown;
  readonly context: TestBackendContext<E>;
  readonly configurator: Configurator | undefined;
  /** The valid config `create` returned. */
  readonly config: unknown;
  readonly record: StoredBackendRecord | undefined;
  readonly compute: Compute | undefined;
  /** The first step that threw, with its error. */
  readonly failure: { step: SetupStep; error: unknown } | undefined;
  /** Configurator methods that are `notImplemented()` stubs. */
  readonly notImplementedSteps: readonly SetupStep[];
  /** Stops the emulator and removes the temporary directory. */
  dispose(): Promise<void>;
}

/**
 * What the suite passes to `validateConfig`: its config is the test author's own, as config.yml
 * is the server admin's, so it may name the emulator's endpoints.
 */
export function conformanceValidateOptions(
  options: Pick<TestBackendOptions<BackendEmulator>, 'defaultCredsEnabled'>,
): ValidateConfigOptions {
  return {
    origin: 'server_config',
    defaultCredsEnabled: options.defaultCredsEnabled ?? true,
    customEndpointsAllowed: true,
  };
}

/** The backend type a descriptor (or module namespace) names, for titles; `unknown` when it names none. */
export function pluginTypeOf(value: unknown): string {
  const candidate = value as { type?: unknown; default?: { type?: unknown } } | null | undefined;
  const type = candidate?.type ?? candidate?.default?.type;
  return typeof type === 'string' ? type : 'unknown';
}

/**
 * Validates the plugin, starts the emulator and takes the valid config
 * through the configurator (`validateConfig` → `createBackend` →
 * `getCompute`). Steps made with `notImplemented()` are not called; a step
 * that throws stops the chain and is reported by the configurator test.
 */
export async function setUpSuite<E extends BackendEmulator>(
  options: TestBackendOptions<E>,
): Promise<SuiteSetup<E>> {
  const packageName = options.packageName ?? `@dstack/backend-${pluginTypeOf(options.plugin)}`;
  let plugin: BackendPlugin | undefined;
  let pluginError: unknown;
  try {
    plugin = checkPlugin(options.plugin, packageName);
  } catch (error) {
    pluginError = error;
  }
  const temporaryDirectory = await mkdtemp(join(tmpdir(), 'dstack-conformance-'));
  let emulator: E;
  try {
    emulator = options.emulator ? await options.emulator() : ({ close: async () => {} } as E);
  } catch (error) {
    await rm(temporaryDirectory, { recursive: true, force: true });
    throw new Error(`testBackend: the emulator did not start: ${show(error)}`, { cause: error });
  }
  const context: TestBackendContext<E> = { emulator, temporaryDirectory };
  const dispose = async () => {
    try {
      await emulator.close();
    } finally {
      await rm(temporaryDirectory, { recursive: true, force: true });
    }
  };

  let configurator: Configurator | undefined;
  let config: unknown;
  let record: StoredBackendRecord | undefined;
  let compute: Compute | undefined;
  let failure: SuiteSetup<E>['failure'];
  const notImplementedSteps: SetupStep[] = [];
  const step = async <T>(name: SetupStep, run: () => Promise<T>): Promise<T | undefined> => {
    if (failure) return undefined;
    try {
      return await run();
    } catch (error) {
      failure = { step: name, error };
      return undefined;
    }
  };

  if (plugin) {
    configurator = plugin.createConfigurator();
    const methods = configurator as unknown as Record<SetupStep, unknown>;
    for (const name of ['validateConfig', 'createBackend', 'getCompute'] as const) {
      if (isNotImplemented(methods[name])) notImplementedSteps.push(name);
    }
    const chosen = configurator;
    config = await step('create', async () => options.create(context));
    if (!notImplementedSteps.includes('validateConfig')) {
      await step('validateConfig', () => chosen.validateConfig(config, conformanceValidateOptions(options)));
    }
    if (!notImplementedSteps.includes('createBackend') && !notImplementedSteps.includes('getCompute')) {
      const projectName = options.projectName ?? DEFAULT_TEST_PROJECT_NAME;
      const stored = await step('createBackend', () => chosen.createBackend(projectName, config));
      if (stored) {
        record = {
          ...(stored as BackendRecord),
          projectId: 'conformance-project',
          backendId: 'conformance-backend',
        };
        const built = record;
        compute = await step('getCompute', () => chosen.getCompute(built));
      }
    }
  }

  return {
    plugin,
    pluginError,
    context,
    configurator,
    config,
    record,
    compute,
    failure,
    notImplementedSteps,
    dispose,
  };
}

/** The Compute, or a violation saying why the suite has none. */
export function requireCompute<E extends BackendEmulator>(setup: SuiteSetup<E>): Compute {
  if (setup.compute) return setup.compute;
  if (!setup.plugin) {
    throw new ConformanceViolation('the plugin is valid', show(setup.pluginError), {
      cause: setup.pluginError,
    });
  }
  if (setup.failure) {
    throw new ConformanceViolation(
      'the configurator builds a Compute from the valid config',
      `${setup.failure.step} threw ${show(setup.failure.error)}`,
      { cause: setup.failure.error },
    );
  }
  throw new ConformanceViolation(
    'the configurator builds a Compute from the valid config',
    'no Compute was built',
  );
}
