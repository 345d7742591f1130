import type * as UnsupportedFields from '../runs/unsupported-fields.js';

/**
 * `runs/unsupported-fields.js` with `nodes > 1` let through. Plans refuse it until jobs get their
 * cluster_info, but the pipelines already place and retry multi-node runs, and their tests apply
 * one past the refusal of that one field:
 *
 *   vi.mock('../runs/unsupported-fields.js', async (importOriginal) =>
 *     (await import('../testing/multinode-runs.test.helpers.js')).allowingMultinodeRuns(await importOriginal()));
 */
export function allowingMultinodeRuns(actual: typeof UnsupportedFields): typeof UnsupportedFields {
  return {
    ...actual,
    refuseUnsupportedRunFields: (configuration, backends) =>
      actual.refuseUnsupportedRunFields({ ...configuration, nodes: 1 } as typeof configuration, backends),
  };
}
