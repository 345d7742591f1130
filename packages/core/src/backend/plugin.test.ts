import { describe, expect, it } from 'vitest';
import { BackendPluginError } from '../errors.js';
import {
  SampleCompute,
  sampleConfigModels,
  samplePlugin,
  stubCompute,
} from './__fixtures__/sample-backend.js';
import {
  assertBackendPlugin,
  assertComputeMatchesPlugin,
  defineBackendPlugin,
  getProvisioningTimeoutSeconds,
  isBackendPlugin,
} from './plugin.js';

const compute = new SampleCompute(
  sampleConfigModels.config.parse({ type: 'sample', project_slug: 'p', creds: { type: 'default' } }),
);

describe('defineBackendPlugin', () => {
  it('brands and freezes the descriptor', () => {
    expect(samplePlugin.$$type).toBe('@dstack/BackendPlugin');
    expect(samplePlugin.specificationVersion).toBe('v1');
    expect(Object.isFrozen(samplePlugin)).toBe(true);
    expect(isBackendPlugin(samplePlugin)).toBe(true);
    expect(isBackendPlugin({ type: 'sample' })).toBe(false);
    expect(isBackendPlugin(null)).toBe(false);
  });

  it('lists every problem of an invalid definition', () => {
    const call = () =>
      defineBackendPlugin({
        ...samplePlugin,
        type: 'Sample',
        computeKind: 'serverless' as 'vm',
        capabilities: ['create-instance', 'teleport' as 'multinode'],
        configSchemas: { ...samplePlugin.configSchemas, storedConfig: {} as never },
        runsOnServerHost: 'yes' as unknown as boolean,
      });
    expect(call).toThrow(BackendPluginError);
    expect(call).toThrow(/type must be a lowercase identifier/);
    expect(call).toThrow(/computeKind must be "vm" or "container", got "serverless"/);
    expect(call).toThrow(/unknown values "teleport"/);
    expect(call).toThrow(/configSchemas.storedConfig must be a zod schema/);
    expect(call).toThrow(/runsOnServerHost must be a boolean when set, got "yes"/);
  });

  it('takes a catalog provider, offline or online, and refuses anything else', () => {
    const offline = { kind: 'offline', name: 'sample', collect: async () => [] } as const;
    const online = { kind: 'online', name: 'sample', query: async () => [] } as const;
    expect(defineBackendPlugin({ ...samplePlugin, catalogProvider: offline }).catalogProvider).toBe(offline);
    expect(defineBackendPlugin({ ...samplePlugin, catalogProvider: online }).catalogProvider).toBe(online);
    const withProvider = (catalogProvider: unknown) => () =>
      defineBackendPlugin({ ...samplePlugin, catalogProvider: catalogProvider as typeof offline });
    expect(withProvider('aws')).toThrow(/catalogProvider must be an object when set, got "aws"/);
    expect(withProvider({})).toThrow(/catalogProvider name must be a non-empty string, got undefined/);
    expect(withProvider({ kind: 'live', name: 'sample' })).toThrow(
      /catalogProvider kind must be "offline" or "online", got "live"/,
    );
    expect(withProvider({ kind: 'offline', name: 'sample', query: async () => [] })).toThrow(
      /catalogProvider is offline but has no collect\(\) method/,
    );
    expect(withProvider({ kind: 'online', name: 'sample' })).toThrow(
      /catalogProvider is online but has no query\(\) method/,
    );
  });

  it('keeps runsOnServerHost, absent meaning a backend away from the server', () => {
    expect(samplePlugin.runsOnServerHost).toBeUndefined();
    expect(defineBackendPlugin({ ...samplePlugin, runsOnServerHost: true }).runsOnServerHost).toBe(true);
  });

  it('computes the provisioning timeout', () => {
    expect(getProvisioningTimeoutSeconds(samplePlugin, 'bm.gpu4.8')).toBe(1200);
    expect(getProvisioningTimeoutSeconds(samplePlugin, 'vm.small')).toBe(600);
  });
});

describe('assertBackendPlugin', () => {
  it('returns a valid descriptor, or the default export of a module namespace', () => {
    expect(assertBackendPlugin(samplePlugin, '@dstack/backend-sample')).toBe(samplePlugin);
    expect(assertBackendPlugin({ default: samplePlugin }, '@dstack/backend-sample')).toBe(samplePlugin);
  });

  it('rejects a wrong $$type, naming the package', () => {
    const call = () => assertBackendPlugin({ ...samplePlugin, $$type: '@other/Plugin' }, '@acme/backend-x');
    expect(call).toThrow(BackendPluginError);
    expect(call).toThrow(/Package "@acme\/backend-x" is not a dstack backend plugin/);
    expect(() => assertBackendPlugin(undefined, 'p')).toThrow(/not a dstack backend plugin/);
  });

  it('rejects an unknown specificationVersion with an upgrade hint', () => {
    try {
      assertBackendPlugin({ ...samplePlugin, specificationVersion: 'v2' }, '@dstack/backend-aws');
      expect.unreachable();
    } catch (error) {
      expect(BackendPluginError.isInstance(error)).toBe(true);
      expect((error as BackendPluginError).packageName).toBe('@dstack/backend-aws');
      expect((error as Error).message).toBe(
        'Package "@dstack/backend-aws" implements backend plugin specification "v2", but this @dstack/core supports only "v1". Install a version of "@dstack/backend-aws" built for this @dstack/core, or upgrade @dstack/core.',
      );
    }
  });

  it('rejects a branded but malformed descriptor', () => {
    const { createConfigurator, ...rest } = samplePlugin;
    expect(() => assertBackendPlugin(rest, 'p')).toThrow(/createConfigurator must be a function/);
  });
});

describe('assertComputeMatchesPlugin', () => {
  it('accepts a matching Compute', () => {
    expect(() => assertComputeMatchesPlugin(samplePlugin, compute)).not.toThrow();
  });

  it('reports type, capability and method mismatches', () => {
    const broken = stubCompute(['create-instance', 'volumes']);
    const call = () => assertComputeMatchesPlugin(samplePlugin, broken);
    expect(call).toThrow(/compute.type is "stub"/);
    expect(call).toThrow(/lacks privileged, instance-volumes/);
    expect(call).toThrow(/has volumes, not declared/);
    expect(call).toThrow(/lacks methods createInstance\(\)$/);
  });
});
