import { useCallback, useEffect, useRef, useState } from 'react';

export interface Loaded<T> {
  data: T | undefined;
  error: string | null;
  reload(): void;
}

/**
 * Loads `load()` now and again every `refreshMs` (0: once) while the page is shown; `deps`
 * restart it. An error is kept beside the last data, so a blip does not blank the page.
 */
export function useData<T>(load: () => Promise<T>, deps: unknown[], refreshMs = 0): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string | null>(null);
  const [generation, setGeneration] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  // `deps` are the caller's; `generation` changes on reload().
  useEffect(() => {
    let cancelled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      try {
        const value = await loadRef.current();
        if (cancelled) return;
        setData(value);
        setError(null);
      } catch (caught) {
        if (!cancelled) setError(caught instanceof Error ? caught.message : String(caught));
      }
      if (!cancelled && refreshMs > 0) timer = setTimeout(tick, refreshMs);
    };
    void tick();
    return () => {
      cancelled = true;
      clearTimeout(timer);
    };
  }, [...deps, generation, refreshMs]);
  const reload = useCallback(() => setGeneration((value) => value + 1), []);
  return { data, error, reload };
}
