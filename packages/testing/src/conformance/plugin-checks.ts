import { assertBackendPlugin, type BackendPlugin, type Capability } from '@dstack/core';
import { ConformanceViolation } from './conformance-violation.js';

/** The descriptor is a valid v1 plugin (wraps core's `assertBackendPlugin`). */
export function checkPlugin(value: unknown, packageName: string): BackendPlugin {
  try {
    return assertBackendPlugin(value, packageName);
  } catch (error) {
    throw new ConformanceViolation(
      'the package exports a valid backend plugin descriptor',
      error instanceof Error ? error.message : String(error),
      { cause: error },
    );
  }
}

/** The descriptor declares exactly `expected` (order aside). */
export function checkDeclaredCapabilities(plugin: BackendPlugin, expected: readonly Capability[]): void {
  const declared = new Set<string>(plugin.capabilities);
  const wanted = new Set<string>(expected);
  const missing = [...wanted].filter((capability) => !declared.has(capability));
  const extra = [...declared].filter((capability) => !wanted.has(capability));
  if (missing.length > 0 || extra.length > 0) {
    const parts = [
      missing.length > 0 ? `lacks ${missing.join(', ')}` : '',
      extra.length > 0 ? `has unexpected ${extra.join(', ')}` : '',
    ].filter(Boolean);
    throw new ConformanceViolation(
      `the plugin declares the capabilities [${expected.join(', ')}]`,
      `it ${parts.join(' and ')} (declared: [${plugin.capabilities.join(', ')}])`,
    );
  }
}
