import { describe, expect, it } from 'vitest';
import { DEFAULT_SCALE_RUNS, scaleDatabasesOf, scaleRunsOf } from './scale-bench.js';
import { quantile } from './stats.js';

describe('scale bench options', () => {
  it('reads --scale-runs, defaulting to 100, 1,000 and 10,000, and refuses what is not a count', () => {
    expect(scaleRunsOf([])).toEqual(DEFAULT_SCALE_RUNS);
    expect(scaleRunsOf(['--scale-runs=20,200'])).toEqual([20, 200]);
    expect(() => scaleRunsOf(['--scale-runs=10,x'])).toThrow(/--scale-runs.*"10,x"/);
    expect(() => scaleRunsOf(['--scale-runs=0'])).toThrow(/--scale-runs/);
  });

  it('reads --scale-db, defaulting to both databases', () => {
    expect(scaleDatabasesOf([])).toEqual(['sqlite', 'postgres']);
    expect(scaleDatabasesOf(['--scale-db=postgres'])).toEqual(['postgres']);
    expect(() => scaleDatabasesOf(['--scale-db=mysql'])).toThrow(/--scale-db.*mysql/);
  });

  it('takes quantiles of unsorted values', () => {
    expect(quantile([3, 1, 2, 5, 4], 0.5)).toBe(3);
    expect(quantile([], 0.99)).toBeNaN();
  });
});
