/**
 * gpuhunt itself, run from its source with python3, as the catalog bench's reference: the same
 * catalog files and the same queries, timed by gpuhunt-query.py around `Catalog.query` on a
 * catalog held in memory (as after gpuhunt's `Catalog.load()`). gpuhunt is not on PyPI here, so
 * its source comes from `GPUHUNT_SOURCE` or `--gpuhunt=DIR` (a checkout of dstackai/gpuhunt, or
 * its `src` folder); without one the bench prints no reference.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { QueryFilterInput } from '@dstack/catalog';
import { summarise, type Timing } from './stats.js';

const SCRIPT = fileURLToPath(new URL('./gpuhunt-query.py', import.meta.url));

/** The folder holding the `gpuhunt` package, or undefined when none is given or it has none. */
export function gpuhuntSourceOf(argv: readonly string[], env: NodeJS.ProcessEnv): string | undefined {
  const given = argv.find((argument) => argument.startsWith('--gpuhunt='))?.slice('--gpuhunt='.length);
  const root = given ?? env.GPUHUNT_SOURCE;
  if (!root) return undefined;
  for (const candidate of [path.join(root, 'src'), root]) {
    if (existsSync(path.join(candidate, 'gpuhunt', '_internal', 'catalog.py'))) return candidate;
  }
  throw new Error(`gpuhunt source: no gpuhunt/_internal/catalog.py under ${root} or ${root}/src`);
}

/** gpuhunt's keyword arguments for one of our filters (the fields the bench's queries use). */
export function gpuhuntQueryArguments(filter: QueryFilterInput): Record<string, unknown> {
  const names: Record<string, string> = {
    minCpu: 'min_cpu',
    maxCpu: 'max_cpu',
    minMemory: 'min_memory',
    maxMemory: 'max_memory',
    minGpuCount: 'min_gpu_count',
    maxGpuCount: 'max_gpu_count',
    gpuName: 'gpu_name',
    minGpuMemory: 'min_gpu_memory',
    maxGpuMemory: 'max_gpu_memory',
    minPrice: 'min_price',
    maxPrice: 'max_price',
    spot: 'spot',
  };
  const argumentsOf: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(filter)) {
    const name = names[field];
    if (name === undefined) throw new Error(`gpuhunt reference: filter field ${field} has no mapping`);
    argumentsOf[name] = value;
  }
  return argumentsOf;
}

export interface GpuhuntTimings {
  rows: number;
  /** Per query name: gpuhunt's timing and its number of results. */
  queries: Map<string, { timing: Timing; results: number }>;
}

/** Times gpuhunt's query of every `<provider>.csv` in `directory` (the providers gpuhunt knows). */
export async function timeGpuhuntQueries(
  source: string,
  directory: string,
  queries: ReadonlyArray<readonly [string, QueryFilterInput]>,
  options: { runs: number; warmups: number },
): Promise<GpuhuntTimings> {
  const queriesJson = JSON.stringify(queries.map(([name, filter]) => [name, gpuhuntQueryArguments(filter)]));
  const child = spawn(
    'python3',
    [SCRIPT, directory, queriesJson, String(options.runs), String(options.warmups)],
    { env: { ...process.env, PYTHONPATH: source }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) throw new Error(`gpuhunt-query.py exited with ${code}: ${stderr}`);
  const answer = JSON.parse(stdout) as {
    rows: number;
    queries: Record<string, { ms: number[]; results: number }>;
  };
  return {
    rows: answer.rows,
    queries: new Map(
      Object.entries(answer.queries).map(([name, { ms, results }]) => [
        name,
        { timing: summarise(ms), results },
      ]),
    ),
  };
}
