import { UnsupportedCapabilityError } from '../errors.js';
import {
  CAPABILITY_METHODS,
  type Capability,
  type Compute,
  type ComputeByCapability,
  type ComputeWithCreateInstance,
  type ComputeWithGateways,
  type ComputeWithGroupProvisioning,
  type ComputeWithInstanceVolumes,
  type ComputeWithMultinode,
  type ComputeWithPlacementGroups,
  type ComputeWithPrivateGateways,
  type ComputeWithPrivileged,
  type ComputeWithReservations,
  type ComputeWithVolumes,
} from './compute.js';

/**
 * Whether `compute` declares `capability` and has the methods it requires.
 * Both must hold: a declared capability without its methods is a broken
 * backend, and methods without the declaration are not used (capabilities are
 * declared, not guessed).
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

export function isComputeWithCreateInstance(compute: Compute): compute is ComputeWithCreateInstance {
  return hasCapability(compute, 'create-instance');
}
export function isComputeWithPrivileged(compute: Compute): compute is ComputeWithPrivileged {
  return hasCapability(compute, 'privileged');
}
export function isComputeWithInstanceVolumes(compute: Compute): compute is ComputeWithInstanceVolumes {
  return hasCapability(compute, 'instance-volumes');
}
export function isComputeWithMultinode(compute: Compute): compute is ComputeWithMultinode {
  return hasCapability(compute, 'multinode');
}
export function isComputeWithPlacementGroups(compute: Compute): compute is ComputeWithPlacementGroups {
  return hasCapability(compute, 'placement-groups');
}
export function isComputeWithVolumes(compute: Compute): compute is ComputeWithVolumes {
  return hasCapability(compute, 'volumes');
}
export function isComputeWithGateways(compute: Compute): compute is ComputeWithGateways {
  return hasCapability(compute, 'gateways');
}
export function isComputeWithPrivateGateways(compute: Compute): compute is ComputeWithPrivateGateways {
  return hasCapability(compute, 'private-gateways');
}
export function isComputeWithReservations(compute: Compute): compute is ComputeWithReservations {
  return hasCapability(compute, 'reservations');
}
export function isComputeWithGroupProvisioning(compute: Compute): compute is ComputeWithGroupProvisioning {
  return hasCapability(compute, 'group-provisioning');
}
