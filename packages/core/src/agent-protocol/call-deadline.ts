/**
 * The deadline of one agent call: a signal aborted once `ms` have passed (with the `TimeoutError`
 * `AbortSignal.timeout` gives) or once `outer` aborts (with its reason), whichever comes first.
 * `clear()` it when the call is over: its timer and its listener on `outer` go at once.
 *
 * The server makes thousands of agent calls a second under load. `AbortSignal.timeout` keeps each
 * call's timer for the whole `ms`, and `AbortSignal.any` ties every call's signal to the server's
 * long-lived one until the garbage collector takes it: 12 µs a call against 1–2 here, besides the
 * collector's work.
 */
import { setMaxListeners } from 'node:events';

export interface CallDeadline {
  readonly signal: AbortSignal;
  clear(): void;
}

export function callDeadline(ms: number, outer?: AbortSignal): CallDeadline {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    ms,
  );
  timer.unref();
  if (outer === undefined) {
    return { signal: controller.signal, clear: () => clearTimeout(timer) };
  }
  if (outer.aborted) controller.abort(outer.reason);
  const onAbort = () => controller.abort(outer.reason);
  // One listener per call in flight on the server's signal: hundreds at once are expected.
  setMaxListeners(0, outer);
  outer.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    clear: () => {
      clearTimeout(timer);
      outer.removeEventListener('abort', onAbort);
    },
  };
}
