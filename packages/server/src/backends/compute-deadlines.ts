/**
 * Deadlines on a backend's Compute calls: a provider API that never answers must not hold a
 * pipeline's worker. Past its deadline a call rejects with `ComputeDeadlineError` (its caller
 * records the failure as for any other: the next offer, a retry later); the call itself is
 * abandoned and its late result ignored. Launches are safe to repeat (keyed by dstack's
 * instance id), so a launch abandoned here and retried never starts a second machine.
 */

/** Calls that start a machine or a resource: providers may take minutes to answer them. */
const LAUNCH_METHODS: ReadonlySet<string> = new Set([
  'runJob',
  'createInstance',
  'createGatewayReplica',
  'createVolume',
  'createPlacementGroup',
]);

export interface ComputeDeadlines {
  /** Launches (`runJob`, `createInstance`, ...). Default 240 000 ms (4 minutes). */
  launchMs?: number;
  /** Every other call. Default 120 000 ms. */
  otherMs?: number;
}

const DEFAULT_LAUNCH_MS = 240_000;
const DEFAULT_OTHER_MS = 120_000;

export class ComputeDeadlineError extends Error {
  override readonly name = 'ComputeDeadlineError';
}

/**
 * `compute` with each method that returns a promise bounded by its deadline; other members as
 * they are. Methods run on `compute` itself, so a call one makes inside another (`runJob`
 * calling `createInstance`) counts once, under the outer call's deadline.
 */
export function withComputeDeadlines<Compute extends { readonly type: string }>(
  compute: Compute,
  deadlines: ComputeDeadlines = {},
): Compute {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(compute, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function' || typeof key !== 'string') return value;
      let bounded = wrapped.get(key);
      if (bounded === undefined) {
        const deadlineMs = LAUNCH_METHODS.has(key)
          ? (deadlines.launchMs ?? DEFAULT_LAUNCH_MS)
          : (deadlines.otherMs ?? DEFAULT_OTHER_MS);
        bounded = (...args: unknown[]) => {
          const result: unknown = value.apply(target, args);
          if (!isPromiseLike(result)) return result;
          return withDeadline(result, deadlineMs, `backend ${target.type}: ${key}`);
        };
        wrapped.set(key, bounded);
      }
      return bounded;
    },
  });
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

function withDeadline<T>(call: PromiseLike<T>, deadlineMs: number, what: string): Promise<T> {
  const settled = Promise.resolve(call);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      // Abandoned: a late failure must not surface as an unhandled rejection.
      settled.catch(() => {});
      reject(new ComputeDeadlineError(`${what} did not answer within ${deadlineMs / 1000} s`));
    }, deadlineMs);
  });
  return Promise.race([settled, deadline]).finally(() => clearTimeout(timer));
}
