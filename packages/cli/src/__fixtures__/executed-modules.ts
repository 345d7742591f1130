/**
 * Which of the bundle's modules a `dstack` process ran. The bundle is one script whose modules
 * run when first imported (scripts/bundle.mjs): esbuild names the function that runs a module
 * after the module's path, and V8's function events (`--log-function-events`, written to a log
 * file) name every function the first time it runs.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export class ExecutedModulesLog {
  readonly directory = mkdtempSync(join(tmpdir(), 'dstack-executed-modules-'));
  #logs = 0;

  /** The node arguments that log a process's function events to a new file, and its reader. */
  newLog(): { nodeArguments: string[]; read: () => string[] } {
    this.#logs += 1;
    const file = join(this.directory, `functions-${this.#logs}.log`);
    return {
      nodeArguments: ['--log-function-events', `--logfile=${file}`, '--no-logfile-per-isolate'],
      // A line: `function,first-execution,<script>,<start>,<end>,<time>,<timestamp>,<name>`.
      read: () =>
        readFileSync(file, 'utf8')
          .split('\n')
          .filter((line) => line.startsWith('function,first-execution,'))
          .map((line) => line.split(',').slice(7).join(',')),
    };
  }

  remove(): void {
    rmSync(this.directory, { recursive: true, force: true });
  }
}
