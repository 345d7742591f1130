// Its own module so that `dstack ps`, which only needs this, does not load the log reader and
// the rest of `attach-run.ts` (each command loads only what it uses: issue 37).

/** Aborts on the first SIGINT or SIGTERM until `dispose` is called. */
export function abortOnInterrupt(): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const abort = () => controller.abort();
  process.once('SIGINT', abort);
  process.once('SIGTERM', abort);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGINT', abort);
      process.off('SIGTERM', abort);
    },
  };
}
