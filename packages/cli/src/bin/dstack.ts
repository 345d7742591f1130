#!/usr/bin/env node
import { exitQuietlyOnClosedPipe } from '../output/closed-pipe.js';
import { run } from '../program.js';

exitQuietlyOnClosedPipe();

try {
  process.exitCode = await run(process.argv);
} catch (error) {
  process.stderr.write(
    `dstack: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 2;
}
