/**
 * One pass of each steady pipeline, seen from the database: from a moment on, how long until
 * every row the pipeline works on (its table, its statuses) has been processed once. A row counts
 * as processed when its `last_processed_at` differs from its value at that moment (every release
 * writes it). A pass cannot be shorter than the pipeline's interval (a row just processed waits
 * that long); a pass much longer than it means the pipeline falls behind.
 */
import type { RunningServer } from '@dstack/server';

/** The pipelines a run keeps busy while its job runs, with their table and the statuses they claim. */
export const STEADY_PIPELINES = [
  { name: 'runs', table: 'runs', statuses: ['running'] },
  { name: 'jobs-running', table: 'jobs', statuses: ['running'] },
  { name: 'instances', table: 'instances', statuses: ['busy'] },
  { name: 'fleets', table: 'fleets', statuses: ['active'] },
] as const;

export type SteadyPipeline = (typeof STEADY_PIPELINES)[number]['name'];

type Db = RunningServer['app']['db'];

async function processedMarks(
  db: Db,
  pipeline: (typeof STEADY_PIPELINES)[number],
): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom(pipeline.table)
    .select(['id', 'last_processed_at'])
    .where('status', 'in', [...pipeline.statuses])
    .execute();
  return new Map(rows.map((row) => [row.id, Number(row.last_processed_at)]));
}

/**
 * Milliseconds of one pass of each steady pipeline from now (NaN when it has no rows, or its
 * pass did not end within `timeoutMs`), polled every `pollMs`.
 */
export async function measurePipelinePasses(
  db: Db,
  options: { pollMs: number; timeoutMs: number },
): Promise<Map<SteadyPipeline, number>> {
  const started = performance.now();
  const waiting = new Map<SteadyPipeline, Map<string, number>>();
  for (const pipeline of STEADY_PIPELINES) waiting.set(pipeline.name, await processedMarks(db, pipeline));
  const passes = new Map<SteadyPipeline, number>();
  for (const [name, marks] of waiting) if (marks.size === 0) passes.set(name, Number.NaN);
  while (passes.size < STEADY_PIPELINES.length && performance.now() - started < options.timeoutMs) {
    await new Promise((resolve) => setTimeout(resolve, options.pollMs));
    for (const pipeline of STEADY_PIPELINES) {
      if (passes.has(pipeline.name)) continue;
      const marks = waiting.get(pipeline.name)!;
      const now = await processedMarks(db, pipeline);
      for (const [id, mark] of marks) {
        // Processed since, or no longer the pipeline's (its status moved on): its pass is done.
        if (now.get(id) !== mark) marks.delete(id);
      }
      if (marks.size === 0) passes.set(pipeline.name, performance.now() - started);
    }
  }
  for (const pipeline of STEADY_PIPELINES)
    if (!passes.has(pipeline.name)) passes.set(pipeline.name, Number.NaN);
  return passes;
}
