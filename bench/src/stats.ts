/** Timing helpers: run a function many times and summarise the durations. */

export interface Timing {
  readonly medianMs: number;
  readonly p90Ms: number;
  readonly runs: number;
}

/** The `fraction` quantile of unsorted `values` (linear interpolation); NaN for none. */
export function quantile(values: readonly number[], fraction: number): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    fraction,
  );
}

function percentile(sorted: readonly number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  const position = (sorted.length - 1) * fraction;
  const lower = Math.floor(position);
  const upper = Math.ceil(position);
  const low = sorted[lower] as number;
  return low + ((sorted[upper] as number) - low) * (position - lower);
}

export function summarise(durationsMs: readonly number[]): Timing {
  const sorted = [...durationsMs].sort((a, b) => a - b);
  return { medianMs: percentile(sorted, 0.5), p90Ms: percentile(sorted, 0.9), runs: sorted.length };
}

/** Times `runs` calls of `task` after `warmups` untimed ones; returns the summary and the last result. */
export async function measure<T>(
  task: () => Promise<T> | T,
  options: { runs: number; warmups?: number },
): Promise<{ timing: Timing; result: T }> {
  let result: T | undefined;
  for (let i = 0; i < (options.warmups ?? 0); i++) result = await task();
  const durations: number[] = [];
  for (let i = 0; i < options.runs; i++) {
    const start = performance.now();
    result = await task();
    durations.push(performance.now() - start);
  }
  return { timing: summarise(durations), result: result as T };
}
