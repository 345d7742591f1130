import { exitQuietlyOnClosedPipe } from '../output/closed-pipe.js';
import { run } from '../program.js';

/**
 * What the `dstack` command does with `argv` (node's `process.argv`): runs it and resolves with
 * the exit status, 2 for an error the CLI did not expect (printed with its stack). The entry of
 * both the tsc build's bin (`dstack.ts`) and the bundle's (`scripts/bundle.mjs`), whose launcher
 * loads it through V8's code cache.
 */
export async function main(argv: readonly string[]): Promise<number> {
  exitQuietlyOnClosedPipe();
  try {
    return await run(argv);
  } catch (error) {
    process.stderr.write(
      `dstack: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    return 2;
  }
}
