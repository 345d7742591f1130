import { UnsupportedCapabilityError } from '../errors.js';
import { CAPABILITY_METHODS, type Capability, type Compute, type ComputeByCapability } from './compute.js';

/**
 * Whether `compute` declares `capability` and has the methods it requires.
 * Both must hold: a declared capability without its methods is a broken
 * backend, and methods without the declaration are not used (capabilities are
 * declared, not guessed). Narrows `compute` to the capability's interface:
 * `if (hasCapability(compute, 'create-instance')) await compute.createInstance(…)`.
 */
export function hasCapability<C extends Capability>(
  compute: Compute,
  capability: C,
): compute is ComputeByCapability[C] {
  if (!Array.isArray(compute.capabilities) || !compute.capabilities.includes(capability)) return false;
  const methods = compute as unknown as Record<string, unknown>;
  return CAPABILITY_METHODS[capability].every((method) => typeof methods[method] === 'function');
}

/**
 * Returns `compute` typed for `capability`, or throws `UnsupportedCapabilityError`
 * naming the backend and the capability.
 */
export function requireCapability<C extends Capability>(
  compute: Compute,
  capability: C,
): ComputeByCapability[C] {
  if (hasCapability(compute, capability)) return compute;
  const declared = Array.isArray(compute.capabilities) && compute.capabilities.includes(capability);
  throw new UnsupportedCapabilityError(capability, {
    backendType: compute.type,
    message: declared
      ? `Backend "${compute.type}" declares the "${capability}" capability but does not implement ${CAPABILITY_METHODS[
          capability
        ]
          .map((method) => `${method}()`)
          .join(', ')}`
      : undefined,
  });
}
