import { NotImplementedError } from '../errors.js';

const NOT_IMPLEMENTED_METHOD = Symbol.for('@dstack/core/notImplementedMethod');

/**
 * A Compute method that is not written yet: calling it throws
 * `NotImplementedError` naming the method and what it must do. The function is
 * marked so that the conformance suite (`@dstack/testing`) reports the tests
 * of that method as todo instead of failing them. The generator's stubs use it:
 *
 * ```ts
 * class ExampleCompute implements Compute {
 *   getOffers = notImplemented<Compute['getOffers']>('ExampleCompute.getOffers');
 * }
 * ```
 */
export function notImplemented<TMethod extends (...args: never[]) => unknown>(
  method: string,
  description?: string,
): TMethod {
  const stub = () => Promise.reject(new NotImplementedError(method, { description }));
  Object.defineProperty(stub, NOT_IMPLEMENTED_METHOD, { value: method });
  return stub as unknown as TMethod;
}

/** Whether `value` is a stub made by `notImplemented` (across copies of core). */
export function isNotImplemented(value: unknown): boolean {
  return typeof value === 'function' && NOT_IMPLEMENTED_METHOD in value;
}
