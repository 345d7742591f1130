/**
 * A vitest reporter that ends every run with the test files that took longest (wall time, from
 * the moment a worker took the file to its last hook) and the total, beside the default
 * reporter's output: a file that grows is noticed the day it grows, not when the suite has
 * doubled.
 */
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import type { Reporter, TestModule, Vitest } from 'vitest/node';

export interface LongestFilesReporterOptions {
  /** How many files to list. Default 15. */
  count?: number;
  /** Where to write every file's wall time as JSON (`[{ file, milliseconds }]`, longest first). */
  outputFile?: string;
}

export interface FileWallTime {
  /** The file's path relative to the run's root. */
  file: string;
  milliseconds: number;
}

/** The lines the reporter prints: the `count` longest files, longest first, then the totals. */
export function formatLongestFiles(
  files: readonly FileWallTime[],
  count: number,
  runMilliseconds: number,
): string[] {
  const seconds = (milliseconds: number) => `${(milliseconds / 1000).toFixed(1)} s`;
  const longest = [...files].sort((a, b) => b.milliseconds - a.milliseconds).slice(0, count);
  const width = Math.max(0, ...longest.map((each) => seconds(each.milliseconds).length));
  const summed = files.reduce((total, each) => total + each.milliseconds, 0);
  return [
    `Longest test files (wall time, ${longest.length} of ${files.length}):`,
    ...longest.map((each) => `  ${seconds(each.milliseconds).padStart(width)}  ${each.file}`),
    `Total: ${seconds(summed)} summed over the files, ${seconds(runMilliseconds)} for the run`,
  ];
}

export class LongestFilesReporter implements Reporter {
  private readonly count: number;
  private readonly outputFile: string | undefined;
  private vitest: Vitest | undefined;
  private runStarted = performance.now();
  /** When a worker took each file (by module id). */
  private readonly queuedAt = new Map<string, number>();
  private readonly wallTimes = new Map<string, number>();

  constructor(options: LongestFilesReporterOptions = {}) {
    this.count = options.count ?? 15;
    this.outputFile = options.outputFile;
  }

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestRunStart(): void {
    this.runStarted = performance.now();
    this.queuedAt.clear();
    this.wallTimes.clear();
  }

  onTestModuleQueued(testModule: TestModule): void {
    this.queuedAt.set(testModule.moduleId, performance.now());
  }

  onTestModuleEnd(testModule: TestModule): void {
    const queued = this.queuedAt.get(testModule.moduleId);
    // A file never reported as queued (a pool that skips the event) falls back to its phases' sum.
    const milliseconds = queued === undefined ? phasesOf(testModule) : performance.now() - queued;
    this.wallTimes.set(testModule.moduleId, milliseconds);
  }

  async onTestRunEnd(): Promise<void> {
    if (this.wallTimes.size === 0 || this.vitest === undefined) return;
    // vitest 3's default reporter prints its summary from `onFinished`, called right after every
    // reporter's `onTestRunEnd`: one turn of the event loop later, the table is the run's last words.
    await new Promise((resolve) => setImmediate(resolve));
    const root = this.vitest.config.root;
    const files = [...this.wallTimes].map(([moduleId, milliseconds]) => ({
      file: relative(root, moduleId),
      milliseconds,
    }));
    if (this.outputFile) {
      const longestFirst = [...files].sort((a, b) => b.milliseconds - a.milliseconds);
      writeFileSync(this.outputFile, `${JSON.stringify(longestFirst, null, 2)}\n`);
    }
    const logger = this.vitest.logger;
    for (const line of formatLongestFiles(files, this.count, performance.now() - this.runStarted)) {
      logger.log(line);
    }
  }
}

function phasesOf(testModule: TestModule): number {
  const diagnostic = testModule.diagnostic();
  return (
    diagnostic.environmentSetupDuration +
    diagnostic.prepareDuration +
    diagnostic.collectDuration +
    diagnostic.setupDuration +
    diagnostic.duration
  );
}
