import { useCallback, useState } from 'react';

export interface Action {
  /** The label of the action under way, or null. */
  busy: string | null;
  error: string | null;
  /** Runs `work` unless another is under way; true when it succeeded. Its error is kept for the page. */
  run(label: string, work: () => Promise<unknown>): Promise<boolean>;
}

/** One form's or one section's buttons: one call at a time, the server's refusal shown beside them. */
export function useAction(): Action {
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const run = useCallback(async (label: string, work: () => Promise<unknown>) => {
    setBusy(label);
    setError(null);
    try {
      await work();
      return true;
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : String(caught));
      return false;
    } finally {
      setBusy(null);
    }
  }, []);
  return { busy, error, run };
}
